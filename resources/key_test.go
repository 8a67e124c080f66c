package resources

import (
	"encoding/json"
	"testing"
)

func TestInstanceAddresses(t *testing.T) {
	cases := []struct {
		name string
		key  Key
		addr string // of template[vhost] with key
		json string
	}{
		{"no key", Key{}, "template[vhost]", "null"},
		{"a string", StringKey("example.com"), `template[vhost]["example.com"]`, `"example.com"`},
		{"an index", IndexKey(3), "template[vhost][3]", "3"},
		{"a string of digits", StringKey("3"), `template[vhost]["3"]`, `"3"`},
		{"quotes and backslashes", StringKey(`a"b\c`), `template[vhost]["a\"b\\c"]`, `"a\"b\\c"`},
		{"control characters", StringKey("a\nb\x01"), `template[vhost]["a\nb\u0001"]`, `"a\nb\u0001"`},
		{"brackets", StringKey(`x]["y`), `template[vhost]["x][\"y"]`, `"x][\"y"`},
		{"template introducers are themselves", StringKey("${x}"), `template[vhost]["${x}"]`, `"${x}"`},
		{"empty", StringKey(""), `template[vhost][""]`, `""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := InstanceAddress("template", "vhost", c.key); got != c.addr {
				t.Errorf("address %s, want %s", got, c.addr)
			}
			block, key, ok := SplitKey(c.addr)
			if ok != !c.key.IsZero() || key != c.key || (ok && block != "template[vhost]") {
				t.Errorf("SplitKey(%s) = %q, %#v, %v", c.addr, block, key, ok)
			}
			b, err := json.Marshal(c.key)
			if err != nil || string(b) != c.json {
				t.Errorf("JSON %s, %v; want %s", b, err, c.json)
			}
			var back Key
			if err := json.Unmarshal(b, &back); err != nil || back != c.key {
				t.Errorf("JSON back %#v, %v", back, err)
			}
		})
	}
}

func TestSplitKeyRefuses(t *testing.T) {
	for _, addr := range []string{
		"file[/etc/motd]", "file[a][01]", "file[a][-1]", "file[a][1.5]", "file[a][ 1]",
		`file[a]["unterminated]`, "file[a][99999999]", "[0]", `["a"]`, "file[a]x[0]",
	} {
		if block, key, ok := SplitKey(addr); ok {
			t.Errorf("SplitKey(%q) = %q, %v, want no key", addr, block, key)
		}
	}
	// A child's instance: the parent's address stays with the block.
	if block, key, ok := SplitKey(`web_site[blog].file[conf]["a"]`); !ok || block != "web_site[blog].file[conf]" || key != StringKey("a") {
		t.Errorf("child instance: %q %#v %v", block, key, ok)
	}
}

func TestKeyJSONRefuses(t *testing.T) {
	for _, in := range []string{`-1`, `1.5`, `1e9`, `true`, `{}`, `[]`, `99999999999999999999`} {
		var k Key
		if err := json.Unmarshal([]byte(in), &k); err == nil {
			t.Errorf("%s read as %#v", in, k)
		}
	}
}
