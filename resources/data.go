package resources

import (
	"context"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
)

// DataSource is one kind of data block, data "TYPE" "NAME" { … }:
// Terraform's data source, a reading of the host made when the plan is
// made, whose answer recipes read as data.TYPE.NAME.result and the plan
// carries, like the host facts. Apply reads it again in pre-flight and
// refuses the plan as stale when the answer differs.
//
// A data source only reads. Its arguments are described by Schema, whose
// Properties are decoded, normalised and validated like a resource's
// (only Name, Type, Required, Default, Normalize, Validate, Warn and
// Description are used); its Actions are empty. The families implement
// data sources beside their types (users and groups in
// resources/accounts, packages in resources/packages, mounts in
// resources/system, exec in resources/commands, files in resources/files)
// and resources/builtin registers them (Registry.WithData).
type DataSource interface {
	// Schema describes the data source's arguments. It must return the
	// same value every time; Schema().Name is the TYPE of data blocks.
	Schema() *Schema
	// Read reads the host and returns the answer: a value made of
	// objects, maps, lists, strings, numbers and bools, wholly known. It
	// must not change the host, and must return the same answer for the
	// same host (apply compares a second reading with the first). A
	// returned error means the host could not be read (or, for exec, the
	// command failed); the plan fails at the data block.
	Read(ctx context.Context, req *DataRequest) (cty.Value, error)
	// Describe words, for reviewers, what Read reads or runs with args:
	// "/etc/passwd and /etc/shadow", "`getent passwd` (sh)". It does no I/O.
	Describe(args map[string]cty.Value) string
}

// DataRequest is one reading of a data source.
type DataRequest struct {
	// Name is the data block's name (its second label).
	Name string
	// Args are the block's arguments, decoded against Schema (set ones
	// only; defaults filled in). Get reads them.
	Args map[string]cty.Value
	// Sensitive is set when the block is sensitive = true: the answer,
	// and anything it prints, must stay out of logs and errors.
	Sensitive bool
	Logger    hclog.Logger
}

// Get is the argument called name: its value, else its default in schema,
// else cty.NilVal.
func (r *DataRequest) Get(schema *Schema, name string) cty.Value {
	if v, ok := r.Args[name]; ok && v != cty.NilVal && !v.IsNull() {
		return v
	}
	if p := schema.Property(name); p != nil && p.Default != cty.NilVal {
		return p.Default
	}
	return cty.NilVal
}

// Log is the request's logger, or one that discards everything.
func (r *DataRequest) Log() hclog.Logger {
	if r == nil || r.Logger == nil {
		return hclog.NewNullLogger()
	}
	return r.Logger
}

// MaxDataAnswer is the largest answer, as JSON, a plan carries of one data
// block (16 MiB): an answer is kept whole in the plan file and shown in
// show -json. A data source that may say more (exec's output, file
// contents) has a cap of its own below it.
const MaxDataAnswer = 16 << 20

// DataResultAttr is the attribute of data.TYPE.NAME that holds the
// answer: data.exec.NAME.result.
const DataResultAttr = "result"

// WithData returns a new registry of r's types and data sources, and ds
// (which replace r's of the same name).
func (r *Registry) WithData(ds ...DataSource) *Registry {
	out := r.With()
	for _, d := range ds {
		out.data[d.Schema().Name] = d
	}
	return out
}

// DataSource returns the data source called name.
func (r *Registry) DataSource(name string) (DataSource, bool) {
	if r == nil {
		return nil, false
	}
	d, ok := r.data[name]
	return d, ok
}

// DataNames lists the registered data source names, sorted.
func (r *Registry) DataNames() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.data))
	for n := range r.data {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DataString is s as a string of a data source's answer: invalid UTF-8
// replaced (U+FFFD), so that the answer's JSON, and its digest, read back
// the same from the plan file.
func DataString(s string) cty.Value {
	return cty.StringVal(strings.ToValidUTF8(s, "\uFFFD"))
}
