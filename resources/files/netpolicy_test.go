package files

import (
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
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

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

func TestInternalKind(t *testing.T) {
	for _, c := range []struct {
		addr string
		want string // "" for external
	}{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"169.254.169.254", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"64:ff9b::a9fe:a9fe", "metadata"}, // NAT64 of 169.254.169.254
		{"2002:a9fe:a9fe::1", "metadata"},  // 6to4 of it
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS's IPv6 metadata service
		{"100.100.100.200", "shared"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"fec0::1", "site-local"},
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"192.0.2.10", ""},
		{"100.128.0.1", ""},
		{"2606:4700:4700::1111", ""},
		{"64:ff9b::808:808", ""},
	} {
		got := internalKind(netip.MustParseAddr(c.addr))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.addr, got, c.want)
		}
	}
}

// internalServer is a loopback server standing for a service inside the
// host or its network: it answers a secret, and counts the requests that
// reached it.
type internalServer struct {
	*httptest.Server
	hits atomic.Int32
}

const internalSecret = "AKIAINTERNALSECRET"

func newInternalServer(t *testing.T, network, addr string) *internalServer {
	t.Helper()
	s := &internalServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprintln(w, internalSecret)
	}))
	if addr != "" {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		s.Listener.Close()
		s.Listener = l
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// redirector answers /to?u=URL with a redirect to URL, and anything else
// with its path.
func redirector(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.URL.Query().Get("u"); r.URL.Path == "/to" && u != "" {
			http.Redirect(w, r, u, http.StatusFound)
			return
		}
		fmt.Fprintf(w, "served %s\n", r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

func to(srv *httptest.Server, target string) string {
	return srv.URL + "/to?u=" + url.QueryEscape(target)
}

// assertNothingKept: a refused download wrote no file and cached nothing.
func (e *rfEnv) assertNothingKept(name string) {
	e.t.Helper()
	if _, err := os.Stat(filepath.Join(e.dir, name)); !os.IsNotExist(err) {
		e.t.Errorf("a file was written: %v", err)
	}
	if blobs, _ := filepath.Glob(filepath.Join(e.cache, "sha256", "*")); len(blobs) != 0 {
		e.t.Errorf("the cache kept %v", blobs)
	}
}

// TestRemoteFileRefusesRedirectToInternal: a server on the internet that
// redirects to loopback, to the metadata service, to [::1] or to a name
// that resolves to loopback gets a clear error, with allow_internal or
// without: nothing is requested from the internal address and nothing of
// it reaches the plan.
func TestRemoteFileRefusesRedirectToInternal(t *testing.T) {
	internal := newInternalServer(t, "tcp4", "")
	v6 := newInternalServer(t, "tcp6", "[::1]:0")
	ext := redirector(t)
	_, port, _ := net.SplitHostPort(internal.Listener.Addr().String())
	cases := []struct {
		name, target, addr, kind string
	}{
		{"loopback", internal.URL + "/admin", "127.0.0.1", "a loopback address"},
		{"metadata service", "http://169.254.169.254/latest/meta-data/iam/security-credentials/", "169.254.169.254", "the cloud instance metadata service's"},
		{"IPv6 loopback", v6.URL + "/", "::1", "a loopback address"},
		{"a name that resolves to loopback", "http://localhost:" + port + "/admin", "", "a loopback address"},
		{"private", "http://10.255.255.1/x", "10.255.255.1", "a private address"},
	}
	for _, c := range cases {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, allow_internal=%v", c.name, allow), func(t *testing.T) {
				e := newRFEnv(t, ext.URL)
				_, step, err := e.plan(e.res("f", "create", map[string]cty.Value{
					"source": cty.StringVal(to(ext, c.target)), "allow_internal": cty.BoolVal(allow), "timeout": cty.NumberIntVal(3),
				}))
				if err == nil {
					t.Fatalf("followed the redirect to %s: %s %+v", c.target, step.Kind, step.Changes)
				}
				msg := err.Error()
				for _, want := range []string{"redirected to ", c.addr, c.kind, "does not follow a redirect from an external address to an internal one, even with allow_internal"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error lacks %q: %s", want, msg)
					}
				}
				if strings.Contains(msg, internalSecret) {
					t.Errorf("the internal answer is in the error: %s", msg)
				}
				e.assertNothingKept("f")
			})
		}
	}
	if n := internal.hits.Load() + v6.hits.Load(); n != 0 {
		t.Errorf("%d requests reached the internal servers", n)
	}
}

// TestRemoteFileInternalFirstURL: a source on an internal address is
// refused unless the resource sets allow_internal; with it, the source
// and redirects that stay inside are followed, but a chain that went out
// does not come back in.
func TestRemoteFileInternalFirstURL(t *testing.T) {
	internal := newRFServer(t, "internal mirror\n")
	e := newRFEnv(t)
	_, _, err := e.plan(e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(internal.URL + "/file")}))
	if err == nil || !strings.Contains(err.Error(), "goes to 127.0.0.1 (a loopback address)") || !strings.Contains(err.Error(), "allow_internal = true") {
		t.Fatalf("an internal source without allow_internal: %v", err)
	}
	if n := internal.requests.Load(); n != 0 {
		t.Fatalf("%d requests reached it", n)
	}
	e.assertNothingKept("f")

	allowed := map[string]cty.Value{"source": cty.StringVal(internal.URL + "/redirect/2"), "allow_internal": cty.True}
	_, step := e.mustPlan(e.res("f", "create", allowed), resources.Create)
	if note := step.Change("checksum").Note; note != "from "+internal.URL+"/file (redirected from "+internal.URL+"/redirect/2)" {
		t.Errorf("note %q", note)
	}

	// Inside, out, and back in: refused.
	inside, ext := redirector(t), redirector(t)
	e.external(ext.URL)
	_, _, err = e.plan(e.res("g", "create", map[string]cty.Value{
		"source": cty.StringVal(to(inside, to(ext, internal.URL+"/file"))), "allow_internal": cty.True,
	}))
	if err == nil || !strings.Contains(err.Error(), "redirected to "+internal.URL+"/file, at 127.0.0.1 (a loopback address); toque does not follow a redirect from an external address to an internal one") {
		t.Fatalf("out and back in: %v", err)
	}
}

// TestRemoteFilePlanNamesTheFinalURL: the plan says where the bytes came
// from after redirects, without the query string a signed URL carries.
func TestRemoteFilePlanNamesTheFinalURL(t *testing.T) {
	cdn := newRFServer(t, "from the cdn\n")
	ext := redirector(t)
	e := newRFEnv(t, ext.URL, cdn.URL)
	_, step := e.mustPlan(e.res("f", "create", map[string]cty.Value{
		"source": cty.StringVal(to(ext, cdn.URL+"/file?X-Signature=t0k3n")),
	}), resources.Create)
	note := step.Change("checksum").Note
	final, from, _ := strings.Cut(note, " (redirected from ")
	if final != "from "+cdn.URL+"/file?…" || !strings.HasPrefix(from, ext.URL+"/to?u=") {
		t.Errorf("note %q", note)
	}
}

// TestRemoteFileThroughProxy: behind a proxy the proxy connects; toque
// checks the address the URL names (here IP literals), not the proxy's.
func TestRemoteFileThroughProxy(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.String())
		mu.Unlock()
		if r.URL.Path == "/bounce" {
			http.Redirect(w, r, "http://10.1.2.3/x", http.StatusFound)
			return
		}
		fmt.Fprintf(w, "via the proxy: %s\n", r.URL)
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	e := newRFEnv(t) // the proxy's loopback address is not made external
	e.typ.net.proxy = func(*http.Request) (*url.URL, error) { return pu, nil }

	_, step := e.mustPlan(e.res("ok", "create", map[string]cty.Value{"source": cty.StringVal("http://192.0.2.10/file")}), resources.Create)
	if c := step.Change("content"); c == nil || c.After.AsString() != "via the proxy: http://192.0.2.10/file\n" {
		t.Fatalf("changes %+v", step.Changes)
	}
	for _, c := range []struct{ source, want string }{
		{"http://169.254.169.254/latest/meta-data/", "goes to 169.254.169.254 (a link-local address: the cloud instance metadata service's)"},
		{"http://127.0.0.1:1/", "goes to 127.0.0.1 (a loopback address)"},
		{"http://[::1]:1/", "goes to ::1 (a loopback address)"},
		{"http://192.0.2.10/bounce", "redirected to http://10.1.2.3/x, at 10.1.2.3 (a private address); toque does not follow a redirect from an external address"},
	} {
		_, _, err := e.plan(e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(c.source)}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.source, err, c.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"http://192.0.2.10/file", "http://192.0.2.10/bounce"}; strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("the proxy was asked for %v, want %v", asked, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the transport's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDownloadSurplusBodyNotLogged: a server that sends more than its
// Content-Length made net/http's transport print "Unsolicited response
// received on idle HTTP channel" with up to 4 KiB of the surplus through
// Go's standard logger (toque's stderr, outside any resource's logger).
// A download keeps no idle connection, so nothing is printed.
func TestDownloadSurplusBodyNotLogged(t *testing.T) {
	var logged syncBuffer
	defer func(w io.Writer, flags int) { log.SetOutput(w); log.SetFlags(flags) }(log.Writer(), log.Flags())
	log.SetOutput(&logged)
	surplus := strings.Repeat("SURPLUS-", 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n%s", surplus)
		buf.Flush()
		time.Sleep(500 * time.Millisecond) // the connection stays open, surplus and all
	}))
	defer srv.Close()
	e := newRFEnv(t, srv.URL)
	_, step := e.mustPlan(e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/x")}), resources.Create)
	if c := step.Change("content"); c == nil || c.After.AsString() != "hello\n" {
		t.Fatalf("changes %+v", step.Changes)
	}
	time.Sleep(300 * time.Millisecond) // the transport's read loop logs right away, or not at all
	if got := logged.String(); got != "" {
		t.Errorf("Go's standard logger printed %d bytes: %.200s…", len(got), got)
	}
}

// TestDownloadSpeaksHTTP1: even to a server that offers HTTP/2, whose
// client logs a server's protocol errors through Go's standard logger.
func TestDownloadSpeaksHTTP1(t *testing.T) {
	var proto atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		fmt.Fprintln(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	e := newRFEnv(t, srv.URL)
	e.mustPlan(e.res("f", "create", map[string]cty.Value{"source": cty.StringVal(srv.URL + "/x"), "ca_file": cty.StringVal(ca)}), resources.Create)
	if got, _ := proto.Load().(string); got != "HTTP/1.1" {
		t.Errorf("the download spoke %q", got)
	}
}
