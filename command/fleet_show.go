package command

import (
	"bytes"
	"runtime"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
)

// FleetShowCommand is `toque fleet show`.
type FleetShowCommand struct {
	*Base
}

func (c *FleetShowCommand) Synopsis() string {
	return "Show a fleet plan, hosts with identical changes grouped"
}

func (c *FleetShowCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] fleet show [options] BUNDLE [HOST]

  Shows a bundle saved by 'toque fleet plan -out=BUNDLE': the hosts whose
  changes are identical together, each set of changes once, then the hosts
  that could not be planned. It needs only the file. With HOST, shows that
  host's plan as 'toque show' would.

Options:

  -markdown          Markdown for a pull-request comment: one section per
                     set of identical changes (-max-bytes=N, default 60000).
  -json              The manifest and the groups as JSON (docs/fleet.md);
                     with HOST, the host's plan in the format of
                     'toque show -json'.
  -verify-key=FILE   Refuse the bundle unless it is signed by one of the
                     public keys in FILE. Default: TOQUE_VERIFY_KEY.
  -no-color          No colour (also NO_COLOR=1).
`
}

func (c *FleetShowCommand) Run(args []string) int {
	var asJSON bool
	var verifyKey string
	var col colorFlags
	var md markdownFlags
	fs := c.newFlagSet("fleet show", c.Help)
	fs.BoolVar(&asJSON, "json", false, "")
	fs.StringVar(&verifyKey, "verify-key", "", "")
	col.register(fs)
	md.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if err := md.check(fs, asJSON); err != nil {
		return c.fail(col.noColor, "%s", err)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return c.fail(col.noColor, "fleet show needs the bundle, and optionally one host: toque fleet show BUNDLE [HOST]")
	}
	verify, err := pickKey(c.Env, "verify-key", isSet(fs, "verify-key"), verifyKey, envVerifyKey)
	if err != nil {
		return c.fail(col.noColor, "%s", err)
	}
	name := fs.Arg(0)
	// One host's plan is decoded on its own: another host's broken plan
	// does not stand in its way.
	b, plans, sig, diags := c.readBundle(name, verify, fs.NArg() == 1)
	if fs.NArg() == 2 {
		return c.showFleetHost(b, name, fs.Arg(1), sig, diags, asJSON, md, col.noColor)
	}
	view := views.NewFleetPlan(c.view(col.noColor), asJSON, md.markdown, false)
	data := views.FleetPlanData{MaxBytes: md.maxBytes, SavedTo: ""}
	if b != nil {
		data.Manifest, data.Plans, data.Digest, data.Signature = &b.Manifest, plans, b.Digest, sig
	}
	if err := view.Show(data, diags); err != nil && !readerGone(err) {
		diags = diags.Append(err)
		c.view(col.noColor).Diagnostics(diag.Diagnostics{}.Append(err))
	}
	return views.ExitStatus(diags)
}

// showFleetHost shows one host's plan of a bundle, as toque show would.
func (c *FleetShowCommand) showFleetHost(b *fleet.Bundle, name, alias string, sig *views.SignatureInfo, diags diag.Diagnostics, asJSON bool, md markdownFlags, noColor bool) int {
	view := views.NewPlan(c.view(noColor), asJSON, md.markdown)
	o := views.PlanOptions{Markdown: md.options(name)}
	var p *plan.Plan
	if b != nil {
		switch e := b.Host(alias); {
		case e == nil:
			diags = diags.Append(diag.Errorf("%s holds no host %q", name, alias).WithKind(views.KindUsage))
		case b.Plans[alias] == nil:
			diags = diags.Append(diag.Errorf("%s holds no plan for %s: it was %s (%s: %s)", name, alias, e.Status, e.Failure, e.Error))
		default:
			f, err := plan.DecodeFile(name+":"+fleet.PlanEntry(alias), b.Plans[alias], plan.ReadOptions{Types: c.Registry})
			if err != nil {
				diags = diags.Append(diag.Errorf("%w", err).WithKind(views.KindPlanRefused))
			} else {
				p, o.Digest, o.Signature = f.Plan, f.Digest, signatureInfo(f)
			}
		}
	}
	if err := view.Show(p, diags, o); err != nil && !readerGone(err) {
		diags = diags.Append(err)
		c.view(noColor).Diagnostics(diag.Diagnostics{}.Append(err))
	}
	return views.ExitStatus(diags)
}

// readBundle reads and verifies a bundle (under the keys verify names),
// and, with decode set, decodes every host's plan, each verified as
// toque show verifies a plan file.
func (b *Base) readBundle(name string, verify keyOption, decode bool) (*fleet.Bundle, map[string]*plan.Plan, *views.SignatureInfo, diag.Diagnostics) {
	var diags diag.Diagnostics
	var trusted []plan.PublicKey
	if verify.path != "" {
		keys, err := plan.LoadTrustedKeys(b.path(verify.path))
		if err != nil {
			return nil, nil, nil, diags.Append(diag.Errorf("%s: %w", verify.from, err).WithKind(views.KindUsage))
		}
		trusted = keys
	}
	bundle, err := fleet.ReadBundle(b.path(name), trusted, verify.path)
	if err != nil {
		return nil, nil, nil, diags.Append(diag.Errorf("%w", err).WithKind(views.KindPlanRefused))
	}
	sig := &views.SignatureInfo{}
	if bundle.Signer != nil {
		sig = &views.SignatureInfo{Signed: true, Fingerprint: bundle.Signer.Fingerprint(), Trusted: trusted != nil}
		for _, k := range trusted {
			if bytes.Equal(k.Key, bundle.Signer.Key) {
				sig.Comment = k.Comment
			}
		}
	}
	if !decode {
		return bundle, nil, sig, diags
	}
	hosts := bundle.Manifest.Hosts
	decoded := make([]*plan.Plan, len(hosts))
	errs := make([]error, len(hosts))
	parallel.For(len(hosts), runtime.GOMAXPROCS(0), func(i int) {
		if data := bundle.Plans[hosts[i].Alias]; data != nil {
			var f *plan.File
			if f, errs[i] = plan.DecodeFile(name+":"+fleet.PlanEntry(hosts[i].Alias), data, plan.ReadOptions{Types: b.Registry}); f != nil {
				decoded[i] = f.Plan
			}
		}
	})
	plans := map[string]*plan.Plan{}
	for i, h := range hosts {
		if errs[i] != nil {
			diags = diags.Append(diag.Errorf("%w", errs[i]).WithKind(views.KindPlanRefused))
		} else if decoded[i] != nil {
			plans[h.Alias] = decoded[i]
		}
	}
	return bundle, plans, sig, diags
}
