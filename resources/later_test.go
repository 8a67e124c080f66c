package resources

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestLater(t *testing.T) {
	ctx := context.Background()
	var ran []string
	job := func(key string, batches string, err error) Job {
		return Job{Key: key, What: "job " + key,
			BatchesWith: func(r *Resource) bool { return r.Type == batches },
			Run: func(context.Context) error {
				ran = append(ran, key)
				return err
			}}
	}
	unit := &Resource{Type: "systemd_unit"}
	svc := &Resource{Type: "service"}

	// A nil Later runs a job at once.
	var none *Later
	if err := none.Defer(ctx, job("now", "", errors.New("boom"))); err == nil || err.Error() != "job now: boom" {
		t.Errorf("nil Later: %v", err)
	}
	if len(ran) != 1 || none.Pending() != nil || none.Flush(ctx) != nil {
		t.Errorf("nil Later ran %v", ran)
	}

	l, ran := NewLater(), nil
	l.Defer(ctx, job("reload", "systemd_unit", nil))
	l.Defer(ctx, job("reload", "systemd_unit", nil)) // the same key: once
	l.Defer(ctx, job("other", "service", errors.New("bad")))
	if got := strings.Join(l.Pending(), ","); got != "reload,other" {
		t.Fatalf("pending %s", got)
	}
	if err := l.Before(ctx, unit); err == nil || err.Error() != "job other: bad" {
		t.Errorf("Before(unit): %v", err)
	}
	if strings.Join(ran, ",") != "other" || strings.Join(l.Pending(), ",") != "reload" {
		t.Errorf("ran %v, pending %v: only the job that does not batch with a unit runs", ran, l.Pending())
	}
	if err := l.Before(ctx, svc); err != nil || strings.Join(ran, ",") != "other,reload" || len(l.Pending()) != 0 {
		t.Errorf("Before(service): %v, ran %v, pending %v", err, ran, l.Pending())
	}
	l.Defer(ctx, job("reload", "systemd_unit", nil))
	if err := l.Flush(ctx); err != nil || strings.Join(ran, ",") != "other,reload,reload" || len(l.Pending()) != 0 {
		t.Errorf("Flush: %v, ran %v", err, ran)
	}
}
