package policy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// recorder is a loopback server that records the Authorization header of
// every request it gets, then hands the request to next.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecorder(t *testing.T, tls bool, next http.Handler) *recorder {
	t.Helper()
	r := &recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

// seen returns the Authorization headers received, and how many requests.
func (r *recorder) seen() (tokens []string, requests int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.auths {
		if a != "" {
			tokens = append(tokens, a)
		}
	}
	return tokens, len(r.auths)
}

// redirectTo answers every request with a redirect to the same path on
// target.
func redirectTo(target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, strings.TrimRight(target, "/")+req.URL.Path, http.StatusFound)
	})
}

// tokenParent makes a policy including base through src, whose workspace
// sends token "s3cret" with the given transport (nil: the default one).
func tokenParent(t *testing.T, src string, client *http.Client) *Workspace {
	t.Helper()
	dir := t.TempDir()
	basePolicy(t, dir, "app", "app", "1.0.0", "include_policy \"base\" {\n"+src+"\n}\n")
	return NewWorkspace(dir, Options{CacheDir: filepath.Join(dir, ".cache"), Token: "s3cret", HTTPClient: client, Logger: hclog.NewNullLogger(),
		HTTP: HTTPOptions{Attempts: 1}})
}

func TestTokenStaysWithItsOrigin(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "export")
	exportBase(t, root, out, "0.1.0")
	files := http.FileServer(http.Dir(out))

	t.Run("sent to the server policy.hcl names", func(t *testing.T) {
		a := newRecorder(t, false, files)
		install(t, tokenParent(t, `remote = "`+a.URL+`/base.lock.json"`, nil), InstallOptions{})
		if tokens, n := a.seen(); len(tokens) != n || n < 2 || tokens[0] != "Bearer s3cret" {
			t.Fatalf("the named loopback server got tokens %q on %d requests, want one on each", tokens, n)
		}
	})

	t.Run("never across a redirect to another port", func(t *testing.T) {
		b := newRecorder(t, false, files)
		a := newRecorder(t, false, redirectTo(b.URL))
		install(t, tokenParent(t, `remote = "`+a.URL+`/base.lock.json"`, nil), InstallOptions{})
		if tokens, n := b.seen(); n == 0 || len(tokens) != 0 {
			t.Fatalf("the server behind the redirect got tokens %q on %d requests", tokens, n)
		}
		if tokens, n := a.seen(); len(tokens) != n {
			t.Fatalf("the named server got %d tokens on %d requests", len(tokens), n)
		}
	})

	t.Run("https to the named server, never to http behind a redirect", func(t *testing.T) {
		b := newRecorder(t, false, files)
		a := newRecorder(t, true, redirectTo(b.URL))
		diags := installErr(t, tokenParent(t, `remote = "`+a.URL+`/base.lock.json"`, a.Client()), InstallOptions{})
		assertDiags(t, diags, []string{"Cannot fetch an included lock"}, []string{"refused a redirect from https to http"})
		if _, n := b.seen(); n != 0 {
			t.Fatalf("the http server behind the redirect got %d requests", n)
		}
		if tokens, n := a.seen(); n != 1 || len(tokens) != 1 {
			t.Fatalf("the https server got tokens %q on %d requests", tokens, n)
		}
	})

	t.Run("https across a redirect to another https origin", func(t *testing.T) {
		b := newRecorder(t, true, files)
		a := newRecorder(t, true, redirectTo(b.URL))
		// Both servers share httptest's certificate; a's client trusts it.
		install(t, tokenParent(t, `remote = "`+a.URL+`/base.lock.json"`, a.Client()), InstallOptions{})
		if tokens, n := b.seen(); n == 0 || len(tokens) != 0 {
			t.Fatalf("the https server behind the redirect got tokens %q on %d requests", tokens, n)
		}
	})

	t.Run("not to an origin only an included lock names", func(t *testing.T) {
		// c serves the cookbook; the included lock (served by a, which
		// policy.hcl names) points its cookbook at c.
		c := newRecorder(t, false, files)
		l, _, err := ReadLock(filepath.Join(out, "base.lock.json"))
		if err != nil {
			t.Fatal(err)
		}
		cl := l.CookbookLocks["base"]
		cl.SourceOptions = SourceOptions{URL: c.URL, Artifact: "cookbook_artifacts/base/" + cl.Identifier}
		b, _ := l.Marshal()
		a := newRecorder(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(b) }))
		install(t, tokenParent(t, `remote = "`+a.URL+`/base.lock.json"`, nil), InstallOptions{})
		if tokens, n := c.seen(); n == 0 || len(tokens) != 0 {
			t.Fatalf("the server only the included lock names got tokens %q on %d requests", tokens, n)
		}
	})

	t.Run("not over plain http to a host that is not loopback", func(t *testing.T) {
		// policies.example.test resolves, for this client only, to a
		// loopback server that wants the token.
		a := newRecorder(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusUnauthorized)
		}))
		port := a.Listener.Addr().(*net.TCPAddr).Port
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, a.Listener.Addr().String())
		}
		w := tokenParent(t, `server = "http://policies.example.test:`+strconv.Itoa(port)+`"
policy_group = "prod"`, &http.Client{Transport: tr})
		assertDiags(t, installErr(t, w, InstallOptions{}), []string{"Cannot fetch an included policy"}, []string{"401", "not sent over plain http", "use https"})
		if tokens, n := a.seen(); n != 1 || len(tokens) != 0 {
			t.Fatalf("the plain http server got tokens %q on %d requests", tokens, n)
		}
	})
}

func TestWithholdReason(t *testing.T) {
	h := newHTTPClient(nil, "t", HTTPOptions{})
	h.trust("https://policies.example.com/base")
	h.trust("http://127.0.0.1:8080")
	h.trust("http://policies.example.com:8080")
	for _, tc := range []struct{ url, want string }{
		{"https://policies.example.com/x", ""},
		{"https://POLICIES.example.com:443/y", ""},
		{"http://127.0.0.1:8080/z", ""},
		{"https://policies.example.com:8443/x", "not one of them"},
		{"http://policies.example.com/x", "not one of them"},
		{"http://policies.example.com:8080/x", "plain http"},
		{"https://evil.example.com/x", "not one of them"},
		{"http://127.0.0.1:9090/z", "not one of them"},
	} {
		u, _ := url.Parse(tc.url)
		got := h.withholdReason(u)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestHTTPTimeoutsAndRetries(t *testing.T) {
	short := HTTPOptions{ConnectTimeout: time.Second, HeaderTimeout: 200 * time.Millisecond, TotalTimeout: 300 * time.Millisecond, Attempts: 2, RetryDelay: 10 * time.Millisecond}
	counted := func(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			h(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv, &n
	}
	get := func(srv *httptest.Server, opts HTTPOptions) (string, error, time.Duration) {
		start := time.Now()
		b, err := newHTTPClient(nil, "", opts).get(context.Background(), srv.URL+"/doc")
		return string(b), err, time.Since(start)
	}

	t.Run("a trickling body is cut off, and tried again", func(t *testing.T) {
		srv, n := counted(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			for {
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		_, err, took := get(srv, short)
		if err == nil || !strings.Contains(err.Error(), "no complete answer within 300ms") || !strings.Contains(err.Error(), "gave up after 2 attempts") {
			t.Fatalf("err %v", err)
		}
		if n.Load() != 2 || took > 3*time.Second {
			t.Fatalf("%d requests in %s", n.Load(), took)
		}
	})

	t.Run("headers that never come", func(t *testing.T) {
		srv, n := counted(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		opts := short
		opts.TotalTimeout = time.Minute
		_, err, took := get(srv, opts)
		if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") || !strings.Contains(err.Error(), "gave up after 2 attempts") {
			t.Fatalf("err %v", err)
		}
		if n.Load() != 2 || took > 3*time.Second {
			t.Fatalf("%d requests in %s", n.Load(), took)
		}
	})

	t.Run("fails once, then succeeds", func(t *testing.T) {
		srv, n := counted(t, func(w http.ResponseWriter, r *http.Request) {})
		srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ok"))
		})
		if b, err, _ := get(srv, short); err != nil || b != "ok" || n.Load() != 2 {
			t.Fatalf("%q %v after %d requests", b, err, n.Load())
		}
	})

	t.Run("a server that keeps failing", func(t *testing.T) {
		srv, n := counted(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
		opts := short
		opts.Attempts = 3
		_, err, _ := get(srv, opts)
		if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway (gave up after 3 attempts)") || n.Load() != 3 {
			t.Fatalf("err %v after %d requests", err, n.Load())
		}
	})

	t.Run("a 404 is not tried again", func(t *testing.T) {
		srv, n := counted(t, http.NotFound)
		_, err, _ := get(srv, short)
		if err == nil || !strings.Contains(err.Error(), "404") || strings.Contains(err.Error(), "attempt") || n.Load() != 1 {
			t.Fatalf("err %v after %d requests", err, n.Load())
		}
	})

	t.Run("a huge answer", func(t *testing.T) {
		srv, n := counted(t, func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // no Content-Length: the limit must hold while reading
			w.Write([]byte(strings.Repeat("x", 4096)))
		})
		opts := short
		opts.MaxDocument = 1024
		_, err, _ := get(srv, opts)
		if err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") || n.Load() != 1 {
			t.Fatalf("err %v after %d requests", err, n.Load())
		}
	})

	t.Run("nothing listening", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = newHTTPClient(nil, "", short).get(context.Background(), "http://"+addr+"/doc")
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "gave up after 2 attempts") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("a connection that never opens", func(t *testing.T) {
		// A dialer that waits like a dropped SYN would, until told to stop.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		opts := short
		opts.ConnectTimeout, opts.TotalTimeout = 100*time.Millisecond, time.Minute
		start := time.Now()
		_, err := newHTTPClient(&http.Client{Transport: tr}, "", opts).get(context.Background(), "http://127.0.0.1:9/doc")
		if err == nil || !strings.Contains(err.Error(), "deadline exceeded") || !strings.Contains(err.Error(), "gave up after 2 attempts") || time.Since(start) > 3*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(start))
		}
	})

	t.Run("cancelled while waiting to try again", func(t *testing.T) {
		srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
		opts := short
		opts.RetryDelay = time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := newHTTPClient(nil, "", opts).get(ctx, srv.URL)
		if err == nil || time.Since(start) > 5*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(start))
		}
	})
}

// TestInstallRetriesAServer: install through a server that fails every
// first request succeeds, each document fetched twice.
func TestInstallRetriesAServer(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "export")
	exportBase(t, root, out, "0.1.0")
	files := http.FileServer(http.Dir(out))
	var mu sync.Mutex
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries[r.URL.Path]++
		first := tries[r.URL.Path] == 1
		mu.Unlock()
		if first {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	basePolicy(t, dir, "app", "app", "1.0.0", "include_policy \"base\" {\n  server = \""+srv.URL+"\"\n  policy_group = \"prod\"\n}\n")
	w := NewWorkspace(dir, Options{CacheDir: filepath.Join(dir, ".cache"), Logger: hclog.NewNullLogger(), HTTP: HTTPOptions{RetryDelay: time.Millisecond}})
	install(t, w, InstallOptions{})
	if len(tries) < 3 {
		t.Fatalf("requests %v", tries)
	}
	for p, n := range tries {
		if n != 2 {
			t.Errorf("%s fetched %d times, want 2", p, n)
		}
	}
	if _, err := os.Stat(w.LockPath()); err != nil {
		t.Fatal(err)
	}
}
