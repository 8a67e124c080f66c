package shellexec

import (
	"fmt"
	"testing"
)

func TestParseUmask(t *testing.T) {
	cases := []struct {
		in      any
		want    int
		wantErr bool
	}{
		{"022", 0o022, false},
		{"0022", 0o022, false},
		{"0o027", 0o027, false},
		{" 77 ", 0o077, false},
		{"0", 0, false},
		{"777", 0o777, false},
		{18, 0o022, false},
		{int64(0o077), 0o077, false},
		{float64(18), 0o022, false},
		{"", 0, true},
		{"089", 0, true},
		{"1000", 0, true},
		{"abc", 0, true},
		{-1, 0, true},
		{512, 0, true},
		{1.5, 0, true},
		{true, 0, true},
		{nil, 0, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%T %v", c.in, c.in), func(t *testing.T) {
			got, err := ParseUmask(c.in)
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("ParseUmask(%v) = %04o, %v", c.in, got, err)
			}
		})
	}
}

func TestValidReturns(t *testing.T) {
	cases := []struct {
		in      []int
		wantErr bool
	}{
		{nil, false},
		{[]int{0, 1, 255}, false},
		{[]int{256}, true},
		{[]int{0, -1}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.in), func(t *testing.T) {
			if err := ValidReturns(c.in); (err != nil) != c.wantErr {
				t.Fatalf("ValidReturns(%v) = %v", c.in, err)
			}
		})
	}
}
