package packages

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// yumRepositoryType is the built-in "yum_repository" type: Chef's
// yum_repository, one dnf (yum) repository written as
// /etc/yum.repos.d/REPOSITORYID.repo, with its signing keys imported into
// rpm's keyring (rpm --import) when rpm lacks them. Its state is the
// fields of that file, read back, and which of its keys rpm has.
//
// dnf reads a new repository's metadata only when its cache is refreshed:
// notify a dnf_makecache immediately (Chef's make_cache does that
// implicitly; toque shows it as a notified run).
type yumRepositoryType struct {
	schema *resources.Schema
	// root prefixes every path it reads and writes ("" in production;
	// tests use a namespace's /proc/PID/root).
	root string
	// dnf runs rpm (the keyring).
	dnf      *dnfProvider
	cacheDir func(context.Context) string
}

// reposDir is where dnf reads repositories from.
const reposDir = "/etc/yum.repos.d"

// YumRepositoryType returns the built-in "yum_repository" type.
func YumRepositoryType() resources.Type {
	return newYumRepositoryType("", newDnfProvider(), files.CacheDir)
}

func newYumRepositoryType(root string, dnf *dnfProvider, cacheDir func(context.Context) string) *yumRepositoryType {
	return &yumRepositoryType{root: root, dnf: dnf, cacheDir: cacheDir, schema: &resources.Schema{
		Name:        "yum_repository",
		Description: "Manages a dnf (yum) repository: /etc/yum.repos.d/REPOSITORYID.repo, and its signing keys in rpm's keyring.",
		Properties: []*resources.Property{
			{Name: "repositoryid", Type: cty.String, NameProperty: true, Namespace: "yum_repository", Validate: validateRepoID,
				Description: "The repository's id: the section [ID] and the file /etc/yum.repos.d/ID.repo. Defaults to the block label."},
			{Name: "description", Type: cty.String, Group: "file", Validate: validateRepoText("description"),
				Description: "The repository's name= (what dnf shows). Defaults to the repositoryid."},
			{Name: "baseurl", Type: cty.DynamicPseudoType, Group: "file", Normalize: normalizeURLList("baseurl", repoURLSchemes),
				Description: "URL of the repository's directory (http, https, ftp or file), or a list of mirrors; dnf's $releasever and $basearch are kept for dnf. One of baseurl, mirrorlist and metalink is required."},
			{Name: "mirrorlist", Type: cty.String, Group: "file", Validate: validateRepoURL("mirrorlist", repoURLSchemes),
				Description: "URL of a file listing the repository's baseurls."},
			{Name: "metalink", Type: cty.String, Group: "file", Validate: validateRepoURL("metalink", repoURLSchemes),
				Description: "URL of a metalink document listing mirrors with the metadata's checksums."},
			{Name: "gpgkey", Type: cty.DynamicPseudoType, Group: "file", LoadInput: true, Normalize: normalizeURLList("gpgkey", keyURLSchemes),
				Description: "URL of the key that signs the packages (https or file; http only with gpgcheck = false set), or a list. Each is imported into rpm's keyring when rpm lacks it (import_gpgkey)."},
			{Name: "gpgkey_checksum", Type: cty.DynamicPseudoType, NonState: true, Normalize: normalizeChecksums,
				Description: "The sha256 of each https gpgkey (a list in gpgkey's order, null for a file: key): toque imports a downloaded key only when the plan fixes its bytes."},
			{Name: "import_gpgkey", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "Import gpgkey into rpm's keyring (rpm --import) when rpm lacks it; false leaves it to dnf, which imports a repository's keys when it first installs from it."},
			{Name: "gpgcheck", Type: cty.Bool, Group: "file", Default: cty.True,
				Description: "Check the packages' signatures (true by default)."},
			{Name: "repo_gpgcheck", Type: cty.Bool, Group: "file",
				Description: "Check the signature of the repository's metadata."},
			{Name: "enabled", Type: cty.Bool, Group: "file", Default: cty.True,
				Description: "Whether dnf reads the repository (true by default)."},
			{Name: "priority", Type: cty.Number, Group: "file", Validate: validateRange("priority", 1, 99),
				Description: "The repository's priority, 1 (first) to 99 (dnf's default)."},
			{Name: "cost", Type: cty.Number, Group: "file", Validate: validateRange("cost", 0, 1<<30),
				Description: "The cost of reaching the repository: of two offering a package, dnf takes it from the cheaper (1000 by default)."},
			{Name: "exclude", Type: cty.DynamicPseudoType, Group: "file", Normalize: normalizeWordList("exclude"),
				Description: "Packages dnf must not take from this repository: names or globs, a list or a string split at spaces."},
			{Name: "includepkgs", Type: cty.DynamicPseudoType, Group: "file", Normalize: normalizeWordList("includepkgs"),
				Description: "The only packages dnf takes from this repository: names or globs."},
			{Name: "skip_if_unavailable", Type: cty.Bool, Group: "file",
				Description: "Let dnf go on without the repository when it cannot be reached."},
			{Name: "metadata_expire", Type: cty.String, Group: "file", Validate: validateExpire,
				Description: `How long dnf keeps the metadata: seconds, or a number with s, m, h or d ("6h"), or "never".`},
			{Name: "sslverify", Type: cty.Bool, Group: "file",
				Description: "Verify the server's TLS certificate (dnf's default: true)."},
			{Name: "sslcacert", Type: cty.String, Group: "file", Validate: props.ValidateAbsPath,
				Description: "A file of CA certificates for the repository's TLS."},
			{Name: "proxy", Type: cty.String, Group: "file", Validate: validateRepoURL("proxy", []string{"http", "https", "socks4", "socks5", "socks5h"}),
				Description: "The proxy dnf reaches the repository through."},
			{Name: "module_hotfixes", Type: cty.Bool, Group: "file",
				Description: "Let the repository's packages override modular filtering."},
			{Name: "allow_internal", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Let the download of an https gpgkey connect to internal addresses (loopback, link-local, private…), as remote_file's allow_internal does."},
		},
		Actions:       []string{"create", "add", "delete", "remove"},
		DefaultAction: "create",
	}}
}

func (t *yumRepositoryType) Schema() *resources.Schema { return t.schema }

var (
	repoURLSchemes = []string{"http", "https", "ftp", "file"}
	keyURLSchemes  = []string{"https", "http", "file", "ftp"}
	repoIDPattern  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`)
)

func validateRepoID(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	s := v.AsString()
	if !repoIDPattern.MatchString(s) || strings.Contains(s, "..") || len(s) > 200 {
		return fmt.Errorf("repositoryid %q: use letters, digits and _ . : - (starting with a letter, digit or _, no \"..\"); it names the file in %s", s, reposDir)
	}
	return nil
}

// validateRepoText refuses what would break out of a key=value line.
func validateRepoText(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() {
			return nil
		}
		s := v.AsString()
		if strings.ContainsAny(s, "\n\r\x00") {
			return fmt.Errorf("%s must be one line", name)
		}
		if strings.TrimSpace(s) != s || s == "" {
			return fmt.Errorf("%s must not be empty or start or end with spaces", name)
		}
		return nil
	}
}

// checkRepoURL checks one URL of a repository file: one of schemes,
// a host for network schemes, an absolute path without ".." for file:,
// no spaces, commas or line breaks (dnf splits lists at them).
func checkRepoURL(name, s string, schemes []string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", name)
	}
	if strings.ContainsAny(s, " \t\n\r,\x00") {
		return fmt.Errorf("%s %q holds a space, a comma or a line break: give a list for several URLs", name, props.RedactURL(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%s is not a URL: it does not parse (not shown: it may hold a password)", name)
	}
	ok := false
	for _, sc := range schemes {
		ok = ok || u.Scheme == sc
	}
	if !ok {
		return fmt.Errorf("%s %q is not a URL with a scheme toque accepts here (%s://…)", name, props.RedactURL(s), strings.Join(schemes, "://…, "))
	}
	if u.Scheme == "file" {
		if u.Host != "" && u.Host != "localhost" || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("%s %q: a file: URL names an absolute path (file:///path)", name, s)
		}
		if strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/..") {
			return fmt.Errorf("%s %q: the path holds \"..\"", name, s)
		}
		return nil
	}
	if u.Host == "" {
		return fmt.Errorf("%s %q has no host", name, props.RedactURL(s))
	}
	return nil
}

func validateRepoURL(name string, schemes []string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() {
			return nil
		}
		return checkRepoURL(name, v.AsString(), schemes)
	}
}

// stringsOf accepts a string or a list of strings (a string of several
// words only where split is set).
func stringsOf(name string, v cty.Value, split bool) ([]string, error) {
	switch {
	case v.Type() == cty.String && split:
		return strings.Fields(v.AsString()), nil
	case v.Type() == cty.String:
		return []string{v.AsString()}, nil
	case v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType():
		return props.ToStrings(v, name)
	}
	return nil, fmt.Errorf("%s must be a string or a list of strings, not %s", name, v.Type().FriendlyName())
}

// normalizeURLList turns a URL or a list of URLs into a non-empty list,
// each checked with checkRepoURL.
func normalizeURLList(name string, schemes []string) func(cty.Value) (cty.Value, error) {
	return func(v cty.Value) (cty.Value, error) {
		if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
			return v, nil
		}
		xs, err := stringsOf(name, v, false)
		if err != nil {
			return cty.NilVal, err
		}
		if len(xs) == 0 {
			return cty.NilVal, fmt.Errorf("%s must not be an empty list", name)
		}
		for _, x := range xs {
			if err := checkRepoURL(name, x, schemes); err != nil {
				return cty.NilVal, err
			}
		}
		return props.StringListVal(xs), nil
	}
}

// normalizeWordList turns a string of words or a list into a list of
// words: package names or globs, for exclude and includepkgs.
func normalizeWordList(name string) func(cty.Value) (cty.Value, error) {
	return func(v cty.Value) (cty.Value, error) {
		if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
			return v, nil
		}
		xs, err := stringsOf(name, v, true)
		if err != nil {
			return cty.NilVal, err
		}
		for _, x := range xs {
			if x == "" || strings.ContainsAny(x, " \t\n\r,\x00=") || strings.HasPrefix(x, "-") || strings.Contains(x, "..") || strings.Contains(x, "/") {
				return cty.NilVal, fmt.Errorf("%s: %q is not a package name or glob (no spaces, commas, =, /, \"..\" or leading -)", name, x)
			}
		}
		return props.StringListVal(xs), nil
	}
}

// normalizeChecksums accepts a checksum or a list (nulls for file: keys).
func normalizeChecksums(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	if v.Type() == cty.String {
		n, err := props.NormalizeChecksum(v)
		if err != nil {
			return cty.NilVal, err
		}
		return cty.ListVal([]cty.Value{n}), nil
	}
	if !v.Type().IsListType() && !v.Type().IsTupleType() {
		return cty.NilVal, fmt.Errorf("gpgkey_checksum must be a string or a list, not %s", v.Type().FriendlyName())
	}
	var out []cty.Value
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			out = append(out, cty.NullVal(cty.String))
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil {
			return cty.NilVal, errors.New("gpgkey_checksum must hold strings (or nulls)")
		}
		n, err := props.NormalizeChecksum(s)
		if err != nil {
			return cty.NilVal, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return cty.ListValEmpty(cty.String), nil
	}
	return cty.ListVal(out), nil
}

func validateRange(name string, lo, hi int64) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() {
			return nil
		}
		bf := v.AsBigFloat()
		n, acc := bf.Int64()
		if !bf.IsInt() || acc != 0 || n < lo || n > hi {
			return fmt.Errorf("%s must be a whole number from %d to %d", name, lo, hi)
		}
		return nil
	}
}

var expirePattern = regexp.MustCompile(`^(never|-1|[0-9]+[smhd]?)$`)

func validateExpire(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	if !expirePattern.MatchString(v.AsString()) {
		return fmt.Errorf("metadata_expire %q: seconds, a number with s, m, h or d (\"6h\"), or \"never\"", v.AsString())
	}
	return nil
}

// repoPath is the repository's file.
func repoPath(r *resources.Resource) string {
	return reposDir + "/" + r.String("repositoryid") + ".repo"
}

// repoHeader opens every file yum_repository writes.
const repoHeader = "# Managed by toque (yum_repository); changes here are undone by the next apply.\n"

// repoFields are the file's keys, in the order they are written, with
// the property of each.
var repoFields = []struct{ key, prop string }{
	{"name", "description"}, {"baseurl", "baseurl"}, {"mirrorlist", "mirrorlist"}, {"metalink", "metalink"},
	{"enabled", "enabled"}, {"gpgcheck", "gpgcheck"}, {"repo_gpgcheck", "repo_gpgcheck"}, {"gpgkey", "gpgkey"},
	{"priority", "priority"}, {"cost", "cost"}, {"exclude", "exclude"}, {"includepkgs", "includepkgs"},
	{"skip_if_unavailable", "skip_if_unavailable"}, {"metadata_expire", "metadata_expire"},
	{"sslverify", "sslverify"}, {"sslcacert", "sslcacert"}, {"proxy", "proxy"}, {"module_hotfixes", "module_hotfixes"},
}

// repoWant is what the file should hold, by property: every set
// property, and description, enabled and gpgcheck always (with their
// defaults), as written.
func repoWant(r *resources.Resource) map[string]cty.Value {
	out := map[string]cty.Value{}
	for _, f := range repoFields {
		if r.IsSet(f.prop) {
			out[f.prop] = r.Get(f.prop)
		}
	}
	if !r.IsSet("description") {
		out["description"] = cty.StringVal(r.String("repositoryid"))
	}
	out["enabled"] = cty.BoolVal(r.Bool("enabled"))
	out["gpgcheck"] = cty.BoolVal(r.Bool("gpgcheck"))
	return out
}

// renderValue is a value as the file holds it.
func renderValue(v cty.Value) string {
	switch {
	case v.Type() == cty.Bool:
		if v.True() {
			return "1"
		}
		return "0"
	case v.Type() == cty.Number:
		return v.AsBigFloat().Text('f', 0)
	case v.Type().IsListType():
		return strings.Join(props.StringList(v), " ")
	}
	return v.AsString()
}

// renderRepo is the whole file for r.
func renderRepo(r *resources.Resource) string {
	want := repoWant(r)
	var b strings.Builder
	b.WriteString(repoHeader)
	b.WriteString("[" + r.String("repositoryid") + "]\n")
	for _, f := range repoFields {
		if v, ok := want[f.prop]; ok {
			b.WriteString(f.key + "=" + renderValue(v) + "\n")
		}
	}
	return b.String()
}

// parseRepo reads back a file: the values of the repository's section
// by property, and whether the file is exactly as renderRepo writes it
// (checked by the caller). ok is false when it holds anything toque
// would not write (another section, an unknown key).
func parseRepo(text, id string) (map[string]cty.Value, bool) {
	out := map[string]cty.Value{}
	section := ""
	ok := true
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if section != id {
				ok = false
			}
			continue
		}
		k, v, found := strings.Cut(line, "=")
		if !found || section != id {
			ok = false
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		prop := ""
		for _, f := range repoFields {
			if f.key == k {
				prop = f.prop
			}
		}
		if prop == "" {
			ok = false
			continue
		}
		switch prop {
		case "baseurl", "gpgkey", "exclude", "includepkgs":
			out[prop] = props.StringListVal(strings.FieldsFunc(v, func(c rune) bool { return c == ' ' || c == ',' || c == '\t' }))
		case "enabled", "gpgcheck", "repo_gpgcheck", "skip_if_unavailable", "sslverify", "module_hotfixes":
			switch strings.ToLower(v) {
			case "1", "true", "yes", "on":
				out[prop] = cty.True
			case "0", "false", "no", "off":
				out[prop] = cty.False
			default:
				out[prop] = cty.StringVal(v)
			}
		case "priority", "cost":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[prop] = cty.NumberIntVal(n)
			} else {
				out[prop] = cty.StringVal(v)
			}
		default:
			out[prop] = cty.StringVal(v)
		}
	}
	return out, ok
}

// Load reads the repository's file and, for the keys the recipe imports,
// whether rpm's keyring has each (one rpm -q gpg-pubkey).
func (t *yumRepositoryType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := repoPath(r)
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	st := &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{}}
	b, err := os.ReadFile(t.root + path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	default:
		st.Exists = true
		vals, _ := parseRepo(string(b), r.String("repositoryid"))
		st.Values = vals
		if string(b) != renderFrom(r.String("repositoryid"), vals) {
			st.Extra["file"] = "not as toque writes it"
		}
	}
	if r.EffectiveAction() == "create" || r.EffectiveAction() == "add" {
		if err := t.loadKeys(ctx, r, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// renderFrom is the file renderRepo writes for these values (read back):
// the file is as toque writes it when it equals it.
func renderFrom(id string, vals map[string]cty.Value) string {
	var b strings.Builder
	b.WriteString(repoHeader + "[" + id + "]\n")
	for _, f := range repoFields {
		if v, ok := vals[f.prop]; ok {
			b.WriteString(f.key + "=" + renderValue(v) + "\n")
		}
	}
	return b.String()
}

// repoKey is one gpgkey toque imports: its URL, the bytes' sha256 for an
// https key, and rpm's name for it once read.
type repoKey struct {
	url, sha256 string
}

// keysToImport lists r's gpgkeys toque imports: every file: and https
// key, when import_gpgkey (an http key is only written: gpgcheck is
// off).
func keysToImport(r *resources.Resource) ([]repoKey, error) {
	if !r.Bool("import_gpgkey") || !r.IsSet("gpgkey") {
		return nil, nil
	}
	urls := props.StringList(r.Get("gpgkey"))
	var sums []string
	if v := r.Get("gpgkey_checksum"); v != cty.NilVal && !v.IsNull() {
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			s := ""
			if !e.IsNull() {
				s = e.AsString()
			}
			sums = append(sums, s)
		}
	}
	var out []repoKey
	for i, u := range urls {
		k := repoKey{url: u}
		if i < len(sums) {
			k.sha256 = sums[i]
		}
		switch {
		case strings.HasPrefix(u, "file:"):
		case strings.HasPrefix(u, "https:"):
			if k.sha256 == "" {
				return nil, fmt.Errorf("gpgkey %s is downloaded, so gpgkey_checksum must give its sha256 (in gpgkey's order): toque imports a signing key only when the plan fixes its bytes; or set import_gpgkey = false to leave the import to dnf", props.RedactURL(u))
			}
		default:
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// keyBytes is a key's content: a file: key read from the host, an https
// one from the download cache or downloaded and checked.
func (t *yumRepositoryType) keyBytes(ctx context.Context, log hclog.Logger, r *resources.Resource, k repoKey) ([]byte, error) {
	if strings.HasPrefix(k.url, "file:") {
		u, _ := url.Parse(k.url)
		b, err := os.ReadFile(t.root + u.Path)
		if err != nil {
			return nil, fmt.Errorf("reading gpgkey %s: %w", k.url, err)
		}
		return b, nil
	}
	b, err := files.Download(ctx, log, t.cacheDir(ctx), files.DownloadOptions{
		URL: k.url, SHA256: k.sha256, MaxSize: 1 << 20, Timeout: time.Minute, AllowInternal: r.Bool("allow_internal"),
	})
	if err != nil {
		return nil, fmt.Errorf("downloading gpgkey %s: %w", props.RedactURL(k.url), err)
	}
	return b, nil
}

// loadKeys records, for each key toque imports, rpm's name for it and
// whether the keyring has it: Extra["key:URL"] is "gpg-pubkey-… imported"
// or "gpg-pubkey-… missing".
func (t *yumRepositoryType) loadKeys(ctx context.Context, r *resources.Resource, st *resources.State) error {
	keys, err := keysToImport(r)
	if err != nil || len(keys) == 0 {
		return err
	}
	res, err := t.dnf.read(ctx, []string{"rpm", "-q", "--qf", `%{NAME}-%{VERSION}-%{RELEASE}\n`, "gpg-pubkey"}, 0, 1)
	if err != nil {
		return fmt.Errorf("reading rpm's keyring: %w", err)
	}
	have := map[string]bool{}
	for _, l := range strings.Fields(res.Stdout) {
		have[l] = true
	}
	for _, k := range keys {
		b, err := t.keyBytes(ctx, hclog.NewNullLogger(), r, k)
		if err != nil {
			return err
		}
		name, err := rpmKeyName(b)
		if err != nil {
			return fmt.Errorf("gpgkey %s: %w", props.RedactURL(k.url), err)
		}
		state := "missing"
		if have[name] {
			state = "imported"
		}
		st.Extra["key:"+k.url] = name + " " + state
	}
	return nil
}

// checkRepo is what Plan refuses: no URL at all, a key over plain http
// while gpgcheck is on (or not set false explicitly).
func checkRepo(r *resources.Resource) error {
	if !r.IsSet("baseurl") && !r.IsSet("mirrorlist") && !r.IsSet("metalink") {
		return errors.New("a repository needs baseurl, mirrorlist or metalink")
	}
	for _, k := range props.StringList(r.Get("gpgkey")) {
		if strings.HasPrefix(k, "http:") && (!r.IsSet("gpgcheck") || r.Bool("gpgcheck")) {
			return fmt.Errorf("gpgkey %s is fetched over plain http, where anyone on the way can replace it, and the key is what gpgcheck trusts: serve it over https (or from a file:), or, for a repository you control, set gpgcheck = false explicitly", props.RedactURL(k))
		}
	}
	if _, err := keysToImport(r); err != nil {
		return err
	}
	return nil
}

// Plan compares the file's fields and rpm's keyring with the recipe.
func (t *yumRepositoryType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := repoPath(desired)
	switch action {
	case "delete", "remove":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: path + " does not exist"}, nil
		}
		return &resources.Step{Kind: resources.Delete, Reason: path + " exists; " + action + " removes it (the keys it imported stay in rpm's keyring: other repositories may use them)"}, nil
	case "create", "add":
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if err := checkRepo(desired); err != nil {
		return nil, err
	}
	want := repoWant(desired)
	var changes []resources.Change
	for _, f := range repoFields {
		p := t.schema.Property(f.prop)
		w, wok := want[f.prop]
		have, hok := current.Values[f.prop]
		switch {
		case wok && hok && p.Equals(w, have):
			continue
		case !wok && !hok:
			continue
		}
		c := resources.Change{Property: f.prop, Before: cty.NilVal, After: w, Default: !desired.IsSet(f.prop)}
		if !wok {
			c.After = cty.NullVal(have.Type())
		}
		if hok && current.Exists {
			c.Before = have
		}
		changes = append(changes, c)
	}
	rewrite := current.Exists && current.Extra["file"] != "" && len(changes) == 0
	var missing []string
	for k, v := range current.Extra {
		if strings.HasPrefix(k, "key:") && strings.HasSuffix(v, " missing") {
			missing = append(missing, strings.TrimSuffix(v, " missing"))
		}
	}
	sort.Strings(missing)
	groups := t.schema.Groups(changes)
	if rewrite {
		groups = append(groups, "file")
	}
	if len(missing) > 0 {
		keyChange := resources.Change{Property: "gpgkey", Before: cty.NilVal, After: desired.Get("gpgkey"),
			Note: "imports " + strings.Join(missing, ", ") + " into rpm's keyring (rpm --import): it lacks it"}
		found := false
		for i := range changes {
			if changes[i].Property == "gpgkey" {
				changes[i].Note, found = keyChange.Note, true
			}
		}
		if !found {
			if v, ok := current.Values["gpgkey"]; ok && current.Exists {
				keyChange.Before = v
			}
			changes = append(changes, keyChange)
		}
		groups = append([]string{"key"}, groups...)
	}
	if len(changes) == 0 && !rewrite {
		return &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state"}, nil
	}
	provides := []resources.Need{{Namespace: resources.NamespaceAptSource, Value: "dnf", What: "yum repository"}}
	if !current.Exists {
		return &resources.Step{Kind: resources.Create, Reason: path + " does not exist", Changes: changes, Groups: groups, Provides: provides}, nil
	}
	reason := "its fields differ"
	switch {
	case rewrite:
		reason = path + " holds other lines than toque writes; it is rewritten"
	case !containsStr(groups, "file"):
		reason = "rpm's keyring lacks the repository's key " + strings.Join(missing, ", ")
	}
	return &resources.Step{Kind: resources.Update, Reason: reason, Changes: changes, Groups: groups, Provides: provides}, nil
}

// Steps import the missing keys first (dnf must never read a repository
// whose key rpm lacks while gpgcheck is on), then write the file
// atomically, mode 0644; delete removes the file.
func (t *yumRepositoryType) Steps() resources.Steps {
	return resources.Steps{Create: t.create, Update: t.create, Delete: t.delete}
}

func (t *yumRepositoryType) delete(_ context.Context, _ *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	return files.Remove(t.root + repoPath(desired))
}

func (t *yumRepositoryType) create(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	if step.HasGroup("key") {
		if err := t.importKeys(ctx, env, desired, current); err != nil {
			return err
		}
	}
	if step.HasGroup("file") {
		return files.WriteAtomic(t.root+repoPath(desired), []byte(renderRepo(desired)), 0o644, true)
	}
	return nil
}

// importKeys imports each key the reading found missing: its bytes (read
// or downloaded again, checked against the name the plan read) in a
// temporary file, with rpm --import.
func (t *yumRepositoryType) importKeys(ctx context.Context, env *resources.Env, r *resources.Resource, current *resources.State) error {
	keys, err := keysToImport(r)
	if err != nil {
		return err
	}
	for _, k := range keys {
		fact := current.Extra["key:"+k.url]
		if !strings.HasSuffix(fact, " missing") {
			continue
		}
		planned := strings.TrimSuffix(fact, " missing")
		b, err := t.keyBytes(ctx, env.Log(), r, k)
		if err != nil {
			return err
		}
		if name, err := rpmKeyName(b); err != nil || name != planned {
			return fmt.Errorf("gpgkey %s is now %s, not %s as planned: toque imports only the key the plan names", props.RedactURL(k.url), name, planned)
		}
		f, err := os.CreateTemp("", "toque-gpgkey-*.asc")
		if err != nil {
			return err
		}
		_, werr := f.Write(b)
		cerr := f.Close()
		defer os.Remove(f.Name())
		if werr != nil || cerr != nil {
			return fmt.Errorf("writing the key for rpm --import: %v", errors.Join(werr, cerr))
		}
		argv := []string{"rpm", "--import", "--", f.Name()}
		env.Log().Info("importing a signing key", "key", planned, "from", props.RedactURL(k.url))
		s := t.dnf.spec(argv, time.Minute, env.Log())
		if res, err := shellexec.Run(ctx, s); err != nil {
			return commandError(argv, res, err)
		}
	}
	return nil
}
