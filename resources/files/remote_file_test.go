package files

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
	"github.com/toquehq/toque/resources/resourcetest"
)

// rfServer is a loopback HTTP server whose answers the test sets, and
// which records what it was asked.
type rfServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     []byte
	etag     string
	requests atomic.Int32
	// conditional counts requests that carried If-None-Match.
	conditional atomic.Int32
	lastAuth    string
}

func newRFServer(t *testing.T, body string) *rfServer {
	s := &rfServer{body: []byte(body), etag: `"v1"`}
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		body, etag := s.body, s.etag
		s.lastAuth = r.Header.Get("Authorization")
		s.mu.Unlock()
		if inm := r.Header.Get("If-None-Match"); inm != "" {
			s.conditional.Add(1)
			if inm == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.Header().Set("ETag", etag)
		w.Write(body)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/redirect/"), "%d", &n)
		if n <= 0 {
			http.Redirect(w, r, "/file", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/redirect/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/truncated", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte(strings.Repeat("x", 50)))
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		w.Write([]byte("late"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", "100")
		} else {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		w.Write([]byte(strings.Repeat("b", 100)))
	})
	var flaky atomic.Int32
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if flaky.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("finally\n"))
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *rfServer) set(body, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag = []byte(body), etag
}

// rfEnv runs remote_file resources through Load, Plan and Converge with
// a cache in a temporary directory.
type rfEnv struct {
	t     *testing.T
	typ   *remoteFileType
	dir   string
	cache string
	state string
}

// newRFEnv makes the world of one test; the loopback servers at the
// given URLs stand for servers on the internet (netpolicy.go's rules
// treat their addresses as external).
func newRFEnv(t *testing.T, external ...string) *rfEnv {
	base := t.TempDir()
	e := &rfEnv{t: t, dir: filepath.Join(base, "files"), cache: filepath.Join(base, "cache"), state: filepath.Join(base, "state")}
	os.MkdirAll(e.dir, 0o755)
	e.typ = newRemoteFileType(func(context.Context) string { return e.cache })
	e.external(external...)
	return e
}

// external treats the addresses of the servers at urls as external.
func (e *rfEnv) external(urls ...string) {
	e.t.Helper()
	if e.typ.net.external == nil {
		e.typ.net.external = map[netip.AddrPort]bool{}
	}
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil {
			e.t.Fatal(err)
		}
		ap, err := netip.ParseAddrPort(pu.Host)
		if err != nil {
			e.t.Fatalf("%s: %v", u, err)
		}
		e.typ.net.external[ap] = true
	}
}

func (e *rfEnv) res(name, action string, values map[string]cty.Value) *resources.Resource {
	e.t.Helper()
	vals := map[string]cty.Value{"path": cty.StringVal(filepath.Join(e.dir, name))}
	for k, v := range values {
		p := e.typ.schema.Property(k)
		if p.Normalize != nil {
			nv, err := p.Normalize(v)
			if err != nil {
				e.t.Fatalf("%s: %v", k, err)
			}
			v = nv
		}
		if p.Validate != nil {
			if err := p.Validate(v); err != nil {
				e.t.Fatalf("%s: %v", k, err)
			}
		}
		vals[k] = v
	}
	return resources.NewResource(e.typ.schema, vals["path"].AsString(), action, vals)
}

func (e *rfEnv) plan(r *resources.Resource) (*resources.State, *resources.Step, error) {
	st, err := e.typ.Load(context.Background(), r.LoadView())
	if err != nil {
		return nil, nil, err
	}
	step, err := resources.PlanStep(e.typ, r, st)
	return st, step, err
}

func (e *rfEnv) mustPlan(r *resources.Resource, kind resources.Kind) (*resources.State, *resources.Step) {
	e.t.Helper()
	st, step, err := e.plan(r)
	if err != nil {
		e.t.Fatalf("plan: %v", err)
	}
	if step.Kind != kind {
		e.t.Fatalf("plan: %s (%s), want %s", step.Kind, step.Reason, kind)
	}
	return st, step
}

func (e *rfEnv) apply(r *resources.Resource) error {
	st, step, err := e.plan(r)
	if err != nil {
		return err
	}
	return resources.ConvergeStep(context.Background(), e.typ, &resources.Env{StateDir: e.state, Logger: hclog.NewNullLogger()}, r, st, step)
}

func (e *rfEnv) read(name string) string {
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		return "(missing: " + err.Error() + ")"
	}
	return string(b)
}

func TestRemoteFileDownloadDiffAndConditionalGet(t *testing.T) {
	srv := newRFServer(t, "line one\nline two\n")
	e := newRFEnv(t, srv.URL)
	os.WriteFile(filepath.Join(e.dir, "f"), []byte("line one\nold two\n"), 0o600)
	r := e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file")})
	st, step := e.mustPlan(r, resources.Update)
	if st.Extra["source_sha256"] != resourcetest.SHA256("line one\nline two\n") {
		t.Fatalf("the reading must record the downloaded sha256: %v", st.Extra)
	}
	content, sum := step.Change("content"), step.Change("checksum")
	if content == nil || content.After.AsString() != "line one\nline two\n" || sum == nil || sum.After.AsString() != resourcetest.SHA256("line one\nline two\n") {
		t.Fatalf("changes %+v", step.Changes)
	}
	if !strings.Contains(sum.Note, "from "+srv.URL+"/file") {
		t.Errorf("note %q", sum.Note)
	}
	if err := resources.ConvergeStep(context.Background(), e.typ, &resources.Env{StateDir: e.state}, r, st, step); err != nil {
		t.Fatal(err)
	}
	if got := e.read("f"); got != "line one\nline two\n" {
		t.Fatalf("content %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(e.dir, "f")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v: an unset mode keeps the old file's", fi.Mode().Perm())
	}
	if backups, _ := filepath.Glob(filepath.Join(e.state, "backup", e.dir, "f", "*")); len(backups) != 1 {
		t.Errorf("backups %v", backups)
	}
	// Plan again: a conditional GET, answered 304, and nothing to do.
	before := srv.requests.Load()
	_, step = e.mustPlan(r, resources.NoOp)
	if srv.requests.Load() != before+1 || srv.conditional.Load() != 1 {
		t.Errorf("requests %d conditional %d: want one conditional GET", srv.requests.Load()-before, srv.conditional.Load())
	}
	// The server changes: the next plan sees it.
	srv.set("line one\nline three\n", `"v2"`)
	st, step = e.mustPlan(r, resources.Update)
	if st.Extra["source_sha256"] != resourcetest.SHA256("line one\nline three\n") {
		t.Errorf("changed source: %v", st.Extra)
	}
	if _, _, err := e.plan(e.res("g", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file"), "use_etag": cty.False})); err != nil {
		t.Fatal(err)
	}
}

func TestRemoteFileChecksum(t *testing.T) {
	body := "payload\n"
	srv := newRFServer(t, body)
	e := newRFEnv(t, srv.URL)
	os.WriteFile(filepath.Join(e.dir, "same"), []byte(body), 0o644)
	same := e.res("same", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file"), "checksum": cty.StringVal(strings.ToUpper(resourcetest.SHA256(body)))})
	e.mustPlan(same, resources.NoOp)
	if n := srv.requests.Load(); n != 0 {
		t.Fatalf("%d requests: a file that has the checksum needs no network", n)
	}

	// A checksum the source does not serve: refused at plan, file intact.
	os.WriteFile(filepath.Join(e.dir, "other"), []byte("old\n"), 0o644)
	bad := e.res("other", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file"), "checksum": cty.StringVal(resourcetest.SHA256("something else"))})
	_, _, err := e.plan(bad)
	if err == nil || !strings.Contains(err.Error(), "served bytes whose sha256 is "+resourcetest.SHA256(body)+", not the checksum "+resourcetest.SHA256("something else")) {
		t.Fatalf("mismatch: %v", err)
	}
	if got := e.read("other"); got != "old\n" {
		t.Fatalf("old file changed: %q", got)
	}

	// The right checksum: downloaded once, into the cache; apply needs no
	// network then.
	good := e.res("new", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file"), "checksum": cty.StringVal(resourcetest.SHA256(body))})
	st, step := e.mustPlan(good, resources.Create)
	srv.Close()
	if err := resources.ConvergeStep(context.Background(), e.typ, &resources.Env{}, good, st, step); err != nil {
		t.Fatal(err)
	}
	if e.read("new") != body {
		t.Fatal("content")
	}
	e.mustPlan(good, resources.NoOp)
}

func TestRemoteFileApplyWritesExactlyThePlannedBytes(t *testing.T) {
	srv := newRFServer(t, "planned\n")
	e := newRFEnv(t, srv.URL)
	os.WriteFile(filepath.Join(e.dir, "f"), []byte("old\n"), 0o644)
	r := e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file")})
	st, step := e.mustPlan(r, resources.Update)
	// The cached copy is damaged and the server now serves other bytes:
	// apply refuses rather than write anything but the planned bytes.
	planned := resourcetest.SHA256("planned\n")
	os.WriteFile(filepath.Join(e.cache, "sha256", planned), []byte("tampered\n"), 0o600)
	srv.set("other\n", `"v2"`)
	err := resources.ConvergeStep(context.Background(), e.typ, &resources.Env{}, r, st, step)
	if err == nil || !strings.Contains(err.Error(), "no longer cached and could not be downloaded again") {
		t.Fatalf("error %v", err)
	}
	if got := e.read("f"); got != "old\n" {
		t.Fatalf("file changed: %q", got)
	}
}

func TestRemoteFileFailures(t *testing.T) {
	srv := newRFServer(t, "ok\n")
	cases := []struct {
		name   string
		values map[string]cty.Value
		want   string
	}{
		{"404", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/missing")}, "the server answered 404 Not Found"},
		{"redirects bounded", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/redirect/12")}, "more than 10 redirects"},
		{"truncated body", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/truncated")}, "cut short"},
		{"timeout", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/slow"), "timeout": cty.NumberIntVal(1)}, "no answer within 1s (timeout)"},
		{"over max_size, Content-Length", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/big"), "max_size": cty.NumberIntVal(10)}, "the body is 100 bytes, more than max_size (10)"},
		{"over max_size, chunked", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/big?chunked=1"), "max_size": cty.NumberIntVal(10)}, "more than max_size (10 bytes)"},
		{"every source fails", map[string]cty.Value{"source": cty.TupleVal([]cty.Value{cty.StringVal(srv.URL + "/missing"), cty.StringVal(srv.URL + "/redirect/20")})}, "every source failed: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRFEnv(t, srv.URL)
			start := time.Now()
			_, _, err := e.plan(e.res("f", "create", c.values))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if time.Since(start) > 4*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if _, err := os.Stat(filepath.Join(e.dir, "f")); !os.IsNotExist(err) {
				t.Errorf("a file was written: %v", err)
			}
			if blobs, _ := filepath.Glob(filepath.Join(e.cache, "sha256", "*")); len(blobs) != 0 {
				t.Errorf("the cache kept %v", blobs)
			}
		})
	}
}

func TestRemoteFileSourcesInOrderRetriesAndRedirects(t *testing.T) {
	srv := newRFServer(t, "ok\n")
	e := newRFEnv(t, srv.URL)
	r := e.res("f", "create", map[string]cty.Value{"source": cty.TupleVal([]cty.Value{
		cty.StringVal(srv.URL + "/missing"), cty.StringVal(srv.URL + "/redirect/3"),
	})})
	st, _ := e.mustPlan(r, resources.Create)
	if st.Extra["source_sha256"] != resourcetest.SHA256("ok\n") {
		t.Fatalf("%v", st.Extra)
	}
	defer func(d time.Duration) { retryBackoff = d }(retryBackoff)
	retryBackoff = 10 * time.Millisecond
	flaky := e.res("g", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/flaky"), "retries": cty.NumberIntVal(2)})
	if err := e.apply(flaky); err != nil {
		t.Fatal(err)
	}
	if e.read("g") != "finally\n" {
		t.Fatal(e.read("g"))
	}
}

func TestRemoteFileCredentialsNeverShown(t *testing.T) {
	srv := newRFServer(t, "secret content\n")
	e := newRFEnv(t, srv.URL)
	u := strings.Replace(srv.URL, "http://", "http://alice:s3cr3t@", 1)
	for _, path := range []string{"/missing", "/redirect/30", "/slow"} {
		_, _, err := e.plan(e.res("f", "create", map[string]cty.Value{
			"source":  cty.StringVal(u + path),
			"headers": cty.MapVal(map[string]cty.Value{"X-Token": cty.StringVal("t0k3n")}),
			"timeout": cty.NumberIntVal(1),
		}))
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "t0k3n") {
			t.Errorf("%s: error %v shows a credential", path, err)
		}
	}
	r := e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(u + "/file")})
	st, step := e.mustPlan(r, resources.Create)
	if !sourcesHaveCredentials(r.Get("source")) {
		t.Error("source with a password must be sensitive")
	}
	if st.Private["content"] == "" || strings.Contains(step.Change("checksum").Note, "s3cr3t") {
		t.Errorf("private %v note %q", st.Private, step.Change("checksum").Note)
	}
	// What a download with credentials brought is not shown either: no
	// content change carries it, the checksum says why.
	if c := step.Change("content"); c != nil {
		t.Errorf("the downloaded content is in the plan: %#v", c.After)
	}
	if !strings.Contains(step.Change("checksum").Note, "downloaded with credentials") {
		t.Errorf("checksum note %q", step.Change("checksum").Note)
	}
	if srv.lastAuth == "" {
		t.Error("the URL's credentials were not sent")
	}
	if err := props.ValidateHTTPURL("ftp://bob:pw@example.com/x"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad URL error %v", err)
	}
}

func TestRemoteFileTLS(t *testing.T) {
	srv := quietTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("over tls\n")) }))
	defer srv.Close()
	e := newRFEnv(t, srv.URL)
	_, _, err := e.plan(e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/x")}))
	if err == nil || !strings.Contains(err.Error(), "cannot be verified") {
		t.Fatalf("unverified TLS: %v", err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	if err := e.apply(e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/x"), "ca_file": cty.StringVal(ca)})); err != nil {
		t.Fatal(err)
	}
	if e.read("f") != "over tls\n" {
		t.Fatal(e.read("f"))
	}
	// A redirect from https to http is not followed.
	plain := newRFServer(t, "x")
	down := quietTLSServer(http.RedirectHandler(plain.URL+"/file", http.StatusFound))
	defer down.Close()
	e.external(plain.URL, down.URL)
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: down.Certificate().Raw}), 0o644)
	_, _, err = e.plan(e.res("g", "create", map[string]cty.Value{"source": cty.StringVal(down.URL), "ca_file": cty.StringVal(ca)}))
	if err == nil || !strings.Contains(err.Error(), "toque does not leave https") {
		t.Fatalf("downgrade: %v", err)
	}
}

func TestRemoteFileBinaryAndBadInput(t *testing.T) {
	srv := newRFServer(t, "\x00\x01\x02binary")
	e := newRFEnv(t, srv.URL)
	_, step := e.mustPlan(e.res("b", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/file")}), resources.Create)
	if step.Change("content") != nil || !strings.Contains(step.Change("checksum").Note, "binary content, 9 bytes: no diff") {
		t.Fatalf("binary: %+v", step.Changes)
	}
	s := e.typ.schema
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"checksum", cty.StringVal("abc"), "64 hexadecimal digits"},
		{"checksum", cty.StringVal(strings.Repeat("g", 64)), "64 hexadecimal digits"},
		{"checksum", cty.StringVal(strings.Repeat("a", 63) + "z"), `"z" is not one`},
		{"source", cty.StringVal("ftp://example.com/x"), "is not an http or https URL"},
		{"source", cty.StringVal("/etc/passwd"), "is not an http or https URL"},
		{"source", cty.StringVal("https://"), "has no host"},
	} {
		_, err := s.Property(c.prop).Normalize(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	if err := s.Property("content").Validate(cty.StringVal("x")); err == nil {
		t.Error("content must be refused")
	}
}

func TestOpenCacheRefusesAnUntrustedDirectory(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // to make a directory another user owns
	base := t.TempDir()
	open := filepath.Join(base, "open")
	os.MkdirAll(open, 0o777)
	os.Chmod(open, 0o777)
	if _, err := openCache(filepath.Join(open, "cache")); err == nil || !strings.Contains(err.Error(), "could be replaced by another user") {
		t.Fatalf("world-writable parent: %v", err)
	}
	theirs := filepath.Join(base, "theirs")
	os.MkdirAll(theirs, 0o755)
	os.Chown(theirs, 65534, 65534)
	if _, err := openCache(theirs); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("another user's directory: %v", err)
	}
}

// quietTLSServer is an httptest TLS server that does not log the
// handshakes the tests make fail on purpose.
func quietTLSServer(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	return srv
}

// TestRemoteFileHeadersStayWithTheirHost: a redirect to another host
// gets none of the recipe's headers (a token meant for one server), as
// Go already drops Authorization and cookies; the same host keeps them.
func TestRemoteFileHeadersStayWithTheirHost(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Get("X-Token")
		mu.Unlock()
		fmt.Fprint(w, "from the other host\n")
	}))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["first"+r.URL.Path] = r.Header.Get("X-Token")
		mu.Unlock()
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
			return
		}
		if r.URL.Path == "/here" {
			http.Redirect(w, r, "/stay", http.StatusFound)
			return
		}
		fmt.Fprint(w, "same host\n")
	}))
	defer first.Close()
	e := newRFEnv(t, first.URL, other.URL)
	for _, path := range []string{"/away", "/here"} {
		e.mustPlan(e.res("f"+path[1:], "create", map[string]cty.Value{
			"source":  cty.StringVal(first.URL + path),
			"headers": cty.MapVal(map[string]cty.Value{"X-Token": cty.StringVal("t0k3n")}),
		}), resources.Create)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["first/away"] != "t0k3n" || seen["first/stay"] != "t0k3n" {
		t.Errorf("the named host did not get the header: %v", seen)
	}
	if got, ok := seen["/landed"]; !ok || got != "" {
		t.Errorf("the other host got X-Token %q (reached %v)", got, ok)
	}
}
