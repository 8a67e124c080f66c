package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// aptRepositoryType is the built-in "apt_repository" type: one APT source,
// written as /etc/apt/sources.list.d/NAME.list, with its signing key in a
// keyring under /etc/apt/keyrings. Its state is the fields of that file,
// read back, and the keyring's content.
type aptRepositoryType struct {
	schema *resources.Schema
	// root prefixes every path it reads and writes ("" in production;
	// tests use a temporary directory).
	root     string
	cacheDir func(context.Context) string
}

// keyringDir is where apt_repository keeps keyrings (apt's documented
// place for keys of third-party repositories).
const keyringDir = "/etc/apt/keyrings"

// AptRepositoryType returns the built-in "apt_repository" type.
func AptRepositoryType() resources.Type { return newAptRepositoryType("", files.CacheDir) }

func newAptRepositoryType(root string, cacheDir func(context.Context) string) *aptRepositoryType {
	return &aptRepositoryType{root: root, cacheDir: cacheDir, schema: &resources.Schema{
		Name:        "apt_repository",
		Description: "Manages an APT repository: /etc/apt/sources.list.d/NAME.list and its signing key.",
		Properties: []*resources.Property{
			{Name: "repo_name", Type: cty.String, NameProperty: true, Namespace: "apt_repository", Validate: validateRepoName,
				Description: "The repository's name: the file is /etc/apt/sources.list.d/NAME.list. Defaults to the block label."},
			{Name: "uri", Type: cty.String, Required: true, Group: "source", Validate: validateRepoURI,
				Description: "The repository's base URI, with its scheme (https://deb.example.com/debian, file:/srv/repo)."},
			{Name: "distribution", Type: cty.String, Required: true, Group: "source", Validate: validateRepoWord("distribution"),
				Description: `The suite or codename ("bookworm"), or a path ending in / for a flat repository ("./").`},
			{Name: "components", Type: cty.List(cty.String), Default: cty.ListValEmpty(cty.String), Group: "source", Validate: validateRepoWords("components"),
				Description: `The components ("main", "contrib"); none for a flat repository.`},
			{Name: "arch", Type: cty.String, Group: "source", Validate: validateRepoWord("arch"),
				Description: `The architecture to fetch ("amd64"); unset: apt's own.`},
			{Name: "trusted", Type: cty.Bool, Default: cty.False, Group: "source",
				Description: "Accept the repository unsigned ([trusted=yes]): only for a repository you control."},
			{Name: "deb_src", Type: cty.Bool, Default: cty.False, Group: "source",
				Description: "Add a deb-src line for source packages too."},
			{Name: "signed_by", Type: cty.String, Group: "source", Validate: validateKeyring,
				Description: "The keyring that signs the repository, under /etc/apt/keyrings; with key set it defaults to /etc/apt/keyrings/NAME.asc (or .gpg for a binary key)."},
			{Name: "key", Type: cty.String, Group: "key", LoadInput: true, Normalize: normalizeRepoKey, Validate: validateRepoKey,
				Description: "The signing key: an ASCII-armored key's text, or an https URL to download it from (then checksum is required). Written to signed_by."},
			{Name: "checksum", Type: cty.String, NonState: true, Normalize: props.NormalizeChecksum,
				Description: "The sha256 of the key a key URL serves: a keyring that has it is not downloaded again, and other bytes are refused."},
			{Name: "allow_internal", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Let the key URL's download connect to internal addresses (loopback, link-local, private…), as remote_file's allow_internal does: for a key on an internal mirror. What apt itself fetches from uri is not affected."},
		},
		Actions:       []string{"add", "delete", "remove"},
		DefaultAction: "add",
	}}
}

func (t *aptRepositoryType) Schema() *resources.Schema { return t.schema }

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func validateRepoName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	if !repoName.MatchString(v.AsString()) {
		return fmt.Errorf("repo_name %q: use letters, digits, _ . and -; it names the file in /etc/apt/sources.list.d", v.AsString())
	}
	return nil
}

func validateRepoURI(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	s := v.AsString()
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("uri is not a URI: it does not parse (not shown: it may hold a password)")
	}
	if u.Scheme == "" || strings.ContainsAny(s, " \t\n[]") {
		return fmt.Errorf("uri %q is not a URI with a scheme (https://…, http://…, file:/…)", props.RedactURL(s))
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
		return fmt.Errorf("uri %q has no host", props.RedactURL(s))
	}
	return nil
}

func validateRepoWord(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() {
			return nil
		}
		s := v.AsString()
		if s == "" || strings.ContainsAny(s, " \t\n[]#") {
			return fmt.Errorf("%s %q must be one word (no spaces, brackets or #)", name, s)
		}
		return nil
	}
}

func validateRepoWords(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsWhollyKnown() || v.IsNull() {
			return nil
		}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				return fmt.Errorf("%s must not hold null", name)
			}
			if err := validateRepoWord(name)(e); err != nil {
				return err
			}
		}
		return nil
	}
}

func validateKeyring(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	p, err := props.CanonicalPath(v.AsString())
	if err != nil {
		return fmt.Errorf("signed_by: %w", err)
	}
	if filepath.Dir(p) != keyringDir {
		return fmt.Errorf("signed_by %q must be a file directly in %s", v.AsString(), keyringDir)
	}
	return nil
}

// normalizeRepoKey trims a URL, and gives an armored key exactly one
// final newline: the bytes the keyring holds.
func normalizeRepoKey(v cty.Value) (cty.Value, error) {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	s := strings.TrimSpace(v.AsString())
	if strings.HasPrefix(s, "-----BEGIN") {
		s += "\n"
	}
	return cty.StringVal(s), nil
}

func validateRepoKey(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	s := strings.TrimSpace(v.AsString())
	switch {
	case strings.HasPrefix(s, "-----BEGIN PGP PUBLIC KEY BLOCK-----"):
		if !strings.Contains(s, "-----END PGP PUBLIC KEY BLOCK-----") {
			return errors.New("key: the armored key has no END line")
		}
		return nil
	case strings.Contains(s, "://"):
		return props.ValidateHTTPURL(s)
	}
	return errors.New("key must be an ASCII-armored public key (-----BEGIN PGP PUBLIC KEY BLOCK-----) or an http(s) URL to download one from")
}

// keyIsURL reports whether the key property names a URL.
func keyIsURL(r *resources.Resource) bool {
	k := r.String("key")
	return k != "" && !strings.HasPrefix(strings.TrimSpace(k), "-----BEGIN")
}

// listPath is where the repository's source file lives.
func (t *aptRepositoryType) listPath(r *resources.Resource) string {
	return "/etc/apt/sources.list.d/" + r.String("repo_name") + ".list"
}

// keyring is the keyring the line names: signed_by, or the default when a
// key is managed, or "".
func keyring(r *resources.Resource) string {
	if p := r.String("signed_by"); p != "" {
		p, _ = props.CanonicalPath(p)
		return p
	}
	if r.String("key") == "" {
		return ""
	}
	ext := ".asc"
	if keyIsURL(r) && (strings.HasSuffix(r.String("key"), ".gpg") || strings.HasSuffix(r.String("key"), ".pgp")) {
		ext = ".gpg"
	}
	return keyringDir + "/" + r.String("repo_name") + ext
}

// debLine is one deb (or deb-src) line as apt_repository writes it.
type debLine struct {
	uri, dist  string
	components []string
	arch       string
	trusted    bool
	signedBy   string
}

func (l debLine) render(kind string) string {
	var opts []string
	if l.arch != "" {
		opts = append(opts, "arch="+l.arch)
	}
	if l.signedBy != "" {
		opts = append(opts, "signed-by="+l.signedBy)
	}
	if l.trusted {
		opts = append(opts, "trusted=yes")
	}
	s := kind + " "
	if len(opts) > 0 {
		s += "[" + strings.Join(opts, " ") + "] "
	}
	s += l.uri + " " + l.dist
	for _, c := range l.components {
		s += " " + c
	}
	return s
}

// listHeader opens every file apt_repository writes.
const listHeader = "# Managed by toque (apt_repository); changes here are undone by the next apply.\n"

// renderList is the whole file for r.
func renderList(r *resources.Resource) string {
	l := desiredLine(r)
	out := listHeader + l.render("deb") + "\n"
	if r.Bool("deb_src") {
		out += l.render("deb-src") + "\n"
	}
	return out
}

func desiredLine(r *resources.Resource) debLine {
	return debLine{
		uri: r.String("uri"), dist: r.String("distribution"), components: props.StringList(r.Get("components")),
		arch: r.String("arch"), trusted: r.Bool("trusted"), signedBy: keyring(r),
	}
}

// parseList reads back a file in the format renderList writes: its first
// deb line, and whether a deb-src line follows. ok is false when the
// file holds anything else (toque then rewrites it).
func parseList(text string) (l debLine, src bool, ok bool) {
	found := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		var pl debLine
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return l, src, false
			}
			for _, o := range strings.Fields(rest[1:end]) {
				k, v, _ := strings.Cut(o, "=")
				switch k {
				case "arch":
					pl.arch = v
				case "signed-by":
					pl.signedBy = v
				case "trusted":
					pl.trusted = v == "yes"
				default:
					return l, src, false
				}
			}
			rest = strings.TrimSpace(rest[end+1:])
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return l, src, false
		}
		pl.uri, pl.dist, pl.components = f[0], f[1], f[2:]
		switch {
		case kind == "deb" && !found:
			l, found = pl, true
		case kind == "deb-src" && found && !src:
			src = true
		default:
			return l, src, false
		}
	}
	return l, src, found
}

// Load reads the source file and the keyring it names (or would name).
// A key URL's keyring is compared by digest with checksum; an armored
// key's, by content.
func (t *aptRepositoryType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := t.listPath(r)
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(t.root + path)
	if errors.Is(err, os.ErrNotExist) {
		return resources.Absent(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	l, src, ok := parseList(string(b))
	if !ok || string(b) != listHeader+l.render("deb")+"\n"+map[bool]string{true: l.render("deb-src") + "\n"}[src] {
		sum := sha256.Sum256(b)
		st.Extra["file"] = "not as toque writes it (sha256 " + hex.EncodeToString(sum[:]) + ")"
	}
	if ok {
		st.Values["uri"] = cty.StringVal(l.uri)
		st.Values["distribution"] = cty.StringVal(l.dist)
		st.Values["components"] = props.StringListVal(l.components)
		st.Values["trusted"] = cty.BoolVal(l.trusted)
		st.Values["deb_src"] = cty.BoolVal(src)
		if l.arch != "" {
			st.Values["arch"] = cty.StringVal(l.arch)
		}
		if l.signedBy != "" {
			st.Values["signed_by"] = cty.StringVal(l.signedBy)
		}
	}
	if kr := keyring(r); kr != "" && r.String("key") != "" {
		key, err := os.ReadFile(t.root + kr)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", kr, err)
		case keyIsURL(r):
			sum := sha256.Sum256(key)
			if have := hex.EncodeToString(sum[:]); have == r.String("checksum") {
				st.Values["key"] = cty.StringVal(r.String("key"))
			} else {
				st.Values["key"] = cty.StringVal("(a keyring of sha256 " + have + ")")
			}
		default:
			st.Values["key"] = cty.StringVal(string(key))
		}
	}
	return st, nil
}

// desiredValues is what the file and keyring should hold: every field of
// the line (the file is written whole, so unset ones mean their default),
// and the key when the recipe manages one.
func desiredValues(r *resources.Resource) map[string]cty.Value {
	l := desiredLine(r)
	out := map[string]cty.Value{
		"uri": cty.StringVal(l.uri), "distribution": cty.StringVal(l.dist), "components": props.StringListVal(l.components),
		"trusted": cty.BoolVal(l.trusted), "deb_src": cty.BoolVal(r.Bool("deb_src")),
	}
	if l.arch != "" {
		out["arch"] = cty.StringVal(l.arch)
	}
	if l.signedBy != "" {
		out["signed_by"] = cty.StringVal(l.signedBy)
	}
	if k := r.String("key"); k != "" {
		out["key"] = cty.StringVal(k)
	}
	return out
}

// Plan compares the file's fields and the keyring with the recipe.
func (t *aptRepositoryType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	switch action {
	case "delete", "remove":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: t.listPath(desired) + " does not exist"}, nil
		}
		why := t.listPath(desired) + " exists; " + action + " removes it"
		if kr := keyring(desired); kr != "" && desired.String("key") != "" {
			why += " and the keyring " + kr
		}
		return &resources.Step{Kind: resources.Delete, Reason: why}, nil
	case "add":
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if desired.String("key") != "" && keyIsURL(desired) && desired.String("checksum") == "" {
		return nil, errors.New("key is a URL, so checksum must give the sha256 of the key it serves: toque installs a signing key only when the plan fixes its bytes")
	}
	if desired.Bool("trusted") && keyring(desired) != "" {
		return nil, errors.New("trusted = true accepts the repository unsigned, so a key or signed_by means nothing with it: set one or the other")
	}
	want := desiredValues(desired)
	var changes []resources.Change
	for _, p := range t.schema.Properties {
		w, ok := want[p.Name]
		if !ok || !p.IsDesiredState() {
			continue
		}
		have, hok := current.Values[p.Name]
		if hok && p.Equals(w, have) {
			continue
		}
		if !current.Exists && !desired.IsSet(p.Name) && (w.RawEquals(cty.False) || (w.Type().IsListType() && w.LengthInt() == 0)) {
			continue // a default that writes nothing into the line
		}
		c := resources.Change{Property: p.Name, Before: cty.NilVal, After: w, Default: !desired.IsSet(p.Name)}
		if hok && current.Exists {
			c.Before = have
		}
		changes = append(changes, c)
	}
	for _, p := range []string{"arch", "signed_by"} {
		if _, ok := want[p]; !ok && current.Values[p] != cty.NilVal && current.Exists {
			changes = append(changes, resources.Change{Property: p, Before: current.Values[p], After: cty.NullVal(cty.String)})
		}
	}
	rewrite := current.Exists && current.Extra["file"] != ""
	if len(changes) == 0 && !rewrite {
		return &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state"}, nil
	}
	groups := t.schema.Groups(changes)
	if rewrite && !containsStr(groups, "source") {
		groups = append([]string{"source"}, groups...)
	}
	provides := []resources.Need{{Namespace: resources.NamespaceAptSource, Value: "apt", What: "apt repository"}}
	if !current.Exists {
		return &resources.Step{Kind: resources.Create, Reason: t.listPath(desired) + " does not exist", Changes: changes, Groups: groups, Provides: provides}, nil
	}
	reason := "its fields differ"
	if rewrite && len(changes) == 0 {
		reason = t.listPath(desired) + " holds other lines than toque writes; it is rewritten"
	}
	return &resources.Step{Kind: resources.Update, Reason: reason, Changes: changes, Groups: groups, Provides: provides}, nil
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Steps write the keyring first (apt must never read a source whose key
// is not there yet), then the source file, each atomically, mode 0644;
// delete removes the file, and the keyring the recipe's key made.
func (t *aptRepositoryType) Steps() resources.Steps {
	return resources.Steps{Create: t.add, Update: t.add, Delete: t.delete}
}

func (t *aptRepositoryType) delete(_ context.Context, _ *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	if err := t.remove(t.listPath(desired)); err != nil {
		return err
	}
	if kr := keyring(desired); kr != "" && desired.String("key") != "" {
		return t.remove(kr)
	}
	return nil
}

func (t *aptRepositoryType) add(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, step *resources.Step) error {
	if step.HasGroup("key") {
		key, err := t.keyBytes(ctx, env, desired)
		if err != nil {
			return err
		}
		if err := t.write(keyring(desired), key); err != nil {
			return err
		}
	}
	if step.HasGroup("source") {
		return t.write(t.listPath(desired), []byte(renderList(desired)))
	}
	return nil
}

// keyBytes is the key to write: the armored text, or the bytes of the
// key URL whose sha256 is checksum (cached, or downloaded and checked).
func (t *aptRepositoryType) keyBytes(ctx context.Context, env *resources.Env, r *resources.Resource) ([]byte, error) {
	if !keyIsURL(r) {
		return []byte(r.String("key")), nil
	}
	b, err := files.Download(ctx, env.Log(), t.cacheDir(ctx), files.DownloadOptions{
		URL: r.String("key"), SHA256: r.String("checksum"), MaxSize: 1 << 20, Timeout: time.Minute,
		AllowInternal: r.Bool("allow_internal"),
	})
	if err != nil {
		return nil, fmt.Errorf("downloading the key: %w", err)
	}
	return b, nil
}

// write replaces path (under root) with content, atomically, 0644,
// through held directories; missing directories (/etc/apt/keyrings) are
// made.
func (t *aptRepositoryType) write(path string, content []byte) error {
	return files.WriteAtomic(t.root+path, content, 0o644, true)
}

func (t *aptRepositoryType) remove(path string) error { return files.Remove(t.root + path) }
