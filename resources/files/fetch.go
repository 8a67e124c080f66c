package files

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// This file is how toque downloads: remote_file's sources, apt_repository's
// keys. Everything downloaded goes into a content-addressed cache under the
// state directory:
//
//	CACHE/sha256/HEX    the bytes whose sha256 is HEX (checked again on every use)
//	CACHE/urls/KEY.json what a URL served last: its sha256, size, ETag and
//	                    Last-Modified (KEY is the sha256 of the URL), for
//	                    a conditional GET
//
// so a plan records a digest, and apply writes exactly the bytes of that
// digest, from the cache, or downloads them again and refuses other bytes.
// TLS verification is always on (a ca_file adds a CA to the system's); a
// redirect may not leave https; proxies come from the environment
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY); internal addresses are refused
// unless the resource allows them (netpolicy.go). A URL's user and
// password, and header values, never appear in errors or logs
// (redactURL).

// maxRedirects bounds the redirects one download follows.
const maxRedirects = 10

// retryBackoff is the wait before the second attempt; the n-th waits n
// times as long. A variable for tests.
var retryBackoff = time.Second

// fetchOptions is one download.
type fetchOptions struct {
	// urls are tried in order; the first that serves the bytes wins.
	urls    []string
	headers map[string]string
	// useETag and useLastModified make the GET conditional on what the
	// URL served last.
	useETag, useLastModified bool
	// timeout bounds each attempt, body included; retries is how many
	// more attempts a transient failure (network, 5xx, 429, a cut body)
	// gets, per URL.
	timeout time.Duration
	retries int
	// maxSize is the largest body accepted, in bytes.
	maxSize int64
	caFile  string
	// want, when set, is the sha256 the bytes must have: a cached copy
	// is used without network, and other bytes are refused.
	want string
	// allowInternal lets the download connect to internal addresses
	// (allow_internal; netpolicy.go).
	allowInternal bool
}

// fetchResult is what a download found.
type fetchResult struct {
	sha  string
	size int64
	// from is the (redacted) URL that served it, "" from the cache alone;
	// final is the URL the redirects ended at, "" when there were none.
	from, final string
	// notModified is set when the server answered 304.
	notModified bool
}

// fetcher downloads into a cache directory.
type fetcher struct {
	cache  string
	logger hclog.Logger
	// net is what tests change in how downloads connect.
	net netHooks
}

func (f *fetcher) log() hclog.Logger {
	if f.logger == nil {
		return hclog.NewNullLogger()
	}
	return f.logger
}

// blob is the path of the cached bytes of digest sha.
func (f *fetcher) blob(sha string) string { return filepath.Join(f.cache, "sha256", sha) }

// cached reports the size of the cached bytes of sha, checking that they
// still hash to it (a damaged copy is removed).
func (f *fetcher) cached(sha string) (int64, bool) {
	file, err := os.Open(f.blob(sha))
	if err != nil {
		return 0, false
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, file)
	if err != nil || hex.EncodeToString(h.Sum(nil)) != sha {
		os.Remove(f.blob(sha))
		return 0, false
	}
	return n, true
}

// fetch gets the bytes o names into the cache.
func (f *fetcher) fetch(ctx context.Context, o fetchOptions) (*fetchResult, error) {
	if o.want != "" {
		if n, ok := f.cached(o.want); ok {
			return &fetchResult{sha: o.want, size: n}, nil
		}
	}
	client, err := f.httpClient(o.caFile)
	if err != nil {
		return nil, err
	}
	var errs []string
	for _, u := range o.urls {
		for attempt := 0; ; attempt++ {
			res, err := f.get(ctx, client, u, o)
			if err == nil {
				return res, nil
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("downloading %s: %w", props.RedactURL(u), ctx.Err())
			}
			var tr *transientError
			if !errors.As(err, &tr) || attempt >= o.retries {
				errs = append(errs, props.RedactURL(err.Error()))
				break
			}
			wait := time.Duration(attempt+1) * retryBackoff
			f.log().Info("download failed; retrying", "url", props.RedactURL(u), "error", props.RedactURL(err.Error()), "in", wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, fmt.Errorf("downloading %s: %w", props.RedactURL(u), ctx.Err())
			}
		}
	}
	if len(errs) == 1 {
		return nil, errors.New(errs[0])
	}
	return nil, fmt.Errorf("every source failed: %s", strings.Join(errs, "; "))
}

// transientError is a failure worth another attempt.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }

func (e *transientError) Unwrap() error { return e.err }

// urlMeta is what a URL served last.
type urlMeta struct {
	SHA256       string `json:"sha256"`
	Size         int64  `json:"size"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

func (f *fetcher) metaPath(u string) string {
	sum := sha256.Sum256([]byte(u))
	return filepath.Join(f.cache, "urls", hex.EncodeToString(sum[:])+".json")
}

func (f *fetcher) readMeta(u string) *urlMeta {
	b, err := os.ReadFile(f.metaPath(u))
	if err != nil {
		return nil
	}
	var m urlMeta
	if json.Unmarshal(b, &m) != nil || m.SHA256 == "" {
		return nil
	}
	return &m
}

func (f *fetcher) writeMeta(u string, m *urlMeta) error {
	b, _ := json.Marshal(m)
	return writeFileAtomic(f.metaPath(u), b)
}

// get makes one attempt at u.
func (f *fetcher) get(ctx context.Context, client *http.Client, u string, o fetchOptions) (*fetchResult, error) {
	shown := props.RedactURL(u)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// The chain of this request and its redirects, which the transport's
	// proxy function and dialer check (netpolicy.go).
	ctx = context.WithValue(ctx, hopKey{}, &hopState{allowInternal: o.allowInternal, hooks: &f.net, url: shown})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", shown, props.RedactURL(err.Error()))
	}
	for k, v := range o.headers {
		req.Header.Set(k, v)
	}
	meta := f.readMeta(u)
	if meta != nil && (o.want == "" || meta.SHA256 == o.want) {
		// Asked only whether the copy is there (not re-hashed: a large
		// download would be read whole on every plan): its bytes are
		// checked where they are used — readBlob for a diff, and at apply
		// cached and writeVerified, which refuse a damaged copy.
		if fi, err := os.Stat(f.blob(meta.SHA256)); err != nil || !fi.Mode().IsRegular() || fi.Size() != meta.Size {
			meta = nil
		}
	} else {
		meta = nil
	}
	if meta != nil && o.useETag && meta.ETag != "" {
		req.Header.Set("If-None-Match", meta.ETag)
	}
	if meta != nil && o.useLastModified && meta.LastModified != "" {
		req.Header.Set("If-Modified-Since", meta.LastModified)
	}
	f.log().Debug("downloading", "url", shown, "conditional", req.Header.Get("If-None-Match") != "" || req.Header.Get("If-Modified-Since") != "")
	resp, err := client.Do(req)
	if err != nil {
		return nil, requestError(shown, err, o.timeout)
	}
	defer resp.Body.Close()
	final := ""
	if resp.Request != nil && resp.Request.URL.String() != req.URL.String() {
		final = shownURL(resp.Request.URL)
		f.log().Debug("redirected", "url", shown, "to", final)
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && meta != nil:
		f.log().Debug("not modified", "url", shown, "sha256", meta.SHA256)
		return &fetchResult{sha: meta.SHA256, size: meta.Size, from: shown, final: final, notModified: true}, nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		return nil, &transientError{fmt.Errorf("%s: the server answered %s", shown, resp.Status)}
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: the server answered %s", shown, resp.Status)
	}
	if resp.ContentLength > o.maxSize {
		return nil, fmt.Errorf("%s: the body is %d bytes, more than max_size (%d); nothing was kept", shown, resp.ContentLength, o.maxSize)
	}
	sha, n, err := f.store(resp.Body, o.maxSize)
	if err != nil {
		var big *tooLargeError
		switch {
		case errors.As(err, &big):
			return nil, fmt.Errorf("%s: the body is more than max_size (%d bytes); nothing was kept", shown, o.maxSize)
		case resp.ContentLength >= 0 && n < resp.ContentLength:
			return nil, &transientError{fmt.Errorf("%s: the body was cut short after %d of %d bytes; nothing was kept", shown, n, resp.ContentLength)}
		}
		return nil, requestError(shown, err, o.timeout)
	}
	if o.want != "" && sha != o.want {
		return nil, fmt.Errorf("%s served bytes whose sha256 is %s, not the checksum %s; nothing was kept", shown, sha, o.want)
	}
	m := &urlMeta{SHA256: sha, Size: n, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	if err := f.writeMeta(u, m); err != nil {
		f.log().Warn("cannot record the download's validators; the next download will not be conditional", "url", shown, "error", err)
	}
	f.log().Debug("downloaded", "url", shown, "sha256", sha, "bytes", n)
	return &fetchResult{sha: sha, size: n, from: shown, final: final}, nil
}

// requestError words a failed request without the URL net/http puts in
// it (which would show a user name).
func requestError(shown string, err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &transientError{fmt.Errorf("%s: no answer within %s (timeout)", shown, timeout)}
	}
	var re *redirectError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: %s", shown, re.msg)
	}
	var ie *internalAddressError
	if errors.As(err, &ie) {
		return fmt.Errorf("%s: %s", shown, ie)
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: the server's certificate cannot be verified (%s); toque always verifies TLS: add the CA that signed it with ca_file", shown, props.RedactURL(ce.Err.Error()))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &transientError{fmt.Errorf("%s: the body was cut short; nothing was kept", shown)}
	}
	return &transientError{fmt.Errorf("%s: %s", shown, props.RedactURL(err.Error()))}
}

// tooLargeError is a body past max_size.
type tooLargeError struct{}

func (*tooLargeError) Error() string { return "too large" }

// store writes body into the cache, hashing it on the way, and returns
// its digest and size. Nothing is kept unless the whole body was read.
func (f *fetcher) store(body io.Reader, max int64) (string, int64, error) {
	dir := filepath.Join(f.cache, "sha256")
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", 0, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, max+1))
	if err != nil {
		return "", n, err
	}
	if n > max {
		return "", n, &tooLargeError{}
	}
	if err := tmp.Sync(); err != nil {
		return "", n, err
	}
	sha := hex.EncodeToString(h.Sum(nil))
	if err := os.Rename(tmp.Name(), f.blob(sha)); err != nil {
		return "", n, err
	}
	return sha, n, nil
}

// redirectError is a redirect toque does not follow.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// httpClient is the client of one download: the system's CAs plus
// caFile's, TLS 1.2 or later, proxies from the environment, at most
// maxRedirects redirects, never from https to http, internal addresses
// only as the request's hopState allows (netpolicy.go).
//
// It keeps no connection alive: every request of a redirect chain dials,
// so that the dialer checks each address it connects to; and net/http
// logs what a server sends on an idle connection (more than its
// Content-Length, "Unsolicited response received on idle HTTP channel",
// up to 4 KiB of it) to Go's standard logger, which is toque's stderr,
// outside the resource's logger. It speaks HTTP/1.1 only, for the same
// reason: Go's HTTP/2 client logs a server's protocol errors there too,
// and one download has nothing to multiplex.
func (f *fetcher) httpClient(caFile string) (*http.Client, error) {
	// nil RootCAs is the system's, loaded when a certificate is first
	// verified; a ca_file extends a copy of them.
	var pool *x509.CertPool
	if caFile != "" {
		var err error
		if pool, err = x509.SystemCertPool(); err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate", caFile)
		}
	}
	choose := f.net.proxy
	if choose == nil {
		choose = http.ProxyFromEnvironment
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = proxyFor(choose)
	tr.DialContext = dialer()
	tr.DisableKeepAlives = true
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return &redirectError{fmt.Sprintf("more than %d redirects (the last to %s); toque stops there", maxRedirects, shownURL(req.URL))}
			}
			if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return &redirectError{fmt.Sprintf("redirected from https to %s; toque does not leave https", shownURL(req.URL))}
			}
			if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
				return &redirectError{fmt.Sprintf("redirected to %s, which is not http or https", shownURL(req.URL))}
			}
			if h := hopOf(req.Context()); h != nil {
				h.redirect(req.URL)
			}
			if req.URL.Host != via[0].URL.Host {
				// The recipe's headers (a token for the host it named) and
				// the conditional ones (for that host's copy) stay with it;
				// Go drops only Authorization and cookies.
				ua := req.Header.Get("User-Agent")
				req.Header = http.Header{}
				if ua != "" {
					req.Header.Set("User-Agent", ua)
				}
			}
			return nil
		},
	}, nil
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// openCache makes (0700) and checks the cache directory dir: it and every
// directory above it must be a real directory that nobody but root and
// toque's user could replace, as the state directory must. A cache
// another user could write would let them choose what toque installs.
func openCache(dir string) (*fetcher, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("download cache %q is not an absolute path", dir)
	}
	for _, sub := range []string{"sha256", "urls"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("download cache: %w", err)
		}
	}
	var parent *unix.Stat_t
	p := "/"
	for _, c := range strings.Split(strings.Trim(filepath.Clean(dir), "/"), "/") {
		p = filepath.Join(p, c)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return nil, fmt.Errorf("download cache: %w", &fs.PathError{Op: "lstat", Path: p, Err: err})
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, fmt.Errorf("download cache: %s is not a directory (a symbolic link is not followed here)", p)
		}
		if !trustedOwner(st.Uid) {
			return nil, fmt.Errorf("download cache: %s belongs to uid %d; it must belong to root or to toque's user", p, st.Uid)
		}
		if parent != nil {
			if why := replaceableBy(parent, &st.Uid); why != "" {
				return nil, fmt.Errorf("download cache: %s could be replaced by another user (%s)", p, why)
			}
		}
		parent = &st
	}
	if parent != nil && parent.Mode&0o022 != 0 {
		return nil, fmt.Errorf("download cache: %s may be written by other users (mode %04o)", dir, parent.Mode&0o7777)
	}
	return &fetcher{cache: dir}, nil
}

// CacheDir is where downloads are cached in a run: the directory ctx
// carries (resources.WithDownloadDir, which the command sets from its own
// settings), else DefaultCacheDir.
func CacheDir(ctx context.Context) string {
	if d := resources.DownloadDirOf(ctx); d != "" {
		return d
	}
	return DefaultCacheDir()
}

// DefaultCacheDir is where downloads are cached when no command says: TOQUE_CACHE_DIR/downloads,
// else STATE_DIR/cache/downloads, with the state directory chosen as the
// command chooses it when -state-dir is not given (TOQUE_STATE_DIR;
// /var/lib/toque for root; the XDG state directory otherwise).
func DefaultCacheDir() string {
	if v := os.Getenv("TOQUE_CACHE_DIR"); v != "" {
		return filepath.Join(v, "downloads")
	}
	state := os.Getenv("TOQUE_STATE_DIR")
	switch {
	case state != "":
	case os.Geteuid() == 0:
		state = "/var/lib/toque"
	case os.Getenv("XDG_STATE_HOME") != "":
		state = filepath.Join(os.Getenv("XDG_STATE_HOME"), "toque")
	default:
		home, _ := os.UserHomeDir()
		state = filepath.Join(home, ".local", "state", "toque")
	}
	return filepath.Join(state, "cache", "downloads")
}
