package policy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// TokenEnv names the environment variable whose value, when set, is sent
// as a bearer token to the policy servers and remote lock URLs that
// policy.hcl names (see HTTPOptions and docs/policies.md for where it may
// go).
const TokenEnv = "TOQUE_POLICY_TOKEN"

// HTTPOptions bound the fetches from policy servers and remote URLs. A
// zero field takes its default.
type HTTPOptions struct {
	// ConnectTimeout bounds the TCP connection and the TLS handshake
	// (default 10s).
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for the response's headers once the
	// request is sent (default 30s).
	HeaderTimeout time.Duration
	// TotalTimeout bounds one attempt, from connecting to the last byte
	// of the body (default 2m): a server trickling its answer is cut off.
	TotalTimeout time.Duration
	// Attempts is how many times a GET is tried when it fails in a way
	// that may pass: no connection, a timeout, 408, 429 or a 5xx status
	// (default 3).
	Attempts int
	// RetryDelay is the wait before the second attempt, doubled before
	// each later one (default 500ms).
	RetryDelay time.Duration
	// MaxDocument bounds one answer's size (default 256 MiB).
	MaxDocument int64
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ConnectTimeout, 10*time.Second)
	def(&o.HeaderTimeout, 30*time.Second)
	def(&o.TotalTimeout, 2*time.Minute)
	def(&o.RetryDelay, 500*time.Millisecond)
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.MaxDocument <= 0 {
		o.MaxDocument = 256 << 20
	}
	return o
}

// maxRedirects bounds the redirects one GET follows.
const maxRedirects = 5

// httpStatusError is a non-200 answer.
type httpStatusError struct {
	URL    string
	Status int
	Text   string
	// Attempts is how many times the GET was tried, when more than one
	// try was allowed for this kind of failure.
	Attempts int
	// Withheld says why the token was not sent, when one is set.
	Withheld string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s: %d %s%s", redactURL(e.URL), e.Status, http.StatusText(e.Status), attemptsNote(e.Attempts))
}

// fetchError is a GET that got no usable answer.
type fetchError struct {
	URL      string
	Err      error
	Attempts int
}

func (e *fetchError) Error() string {
	return fmt.Sprintf("GET %s: %s%s", redactURL(e.URL), e.Err, attemptsNote(e.Attempts))
}

func (e *fetchError) Unwrap() error { return e.Err }

func attemptsNote(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (gave up after %d attempts)", n)
	}
	if n == 1 {
		return " (1 attempt)"
	}
	return ""
}

// redirectError is a redirect toque refuses to follow.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// httpClient fetches documents from policy servers. TLS certificates are
// verified (the transport decides; the default one verifies).
//
// The token goes only to a trusted origin (scheme, host and port of a
// server or remote URL that policy.hcl names), over https or to a loopback
// address, and only on the hops of a GET that stay on the origin the GET
// started at: never across a redirect to another origin. A redirect from
// https to http is refused.
type httpClient struct {
	client *http.Client
	token  string
	opts   HTTPOptions

	mu      sync.Mutex
	trusted map[string]bool
}

// startOrigin is the context key holding the origin a GET started at.
type startOrigin struct{}

func newHTTPClient(base *http.Client, token string, opts HTTPOptions) *httpClient {
	h := &httpClient{token: token, opts: opts.withDefaults(), trusted: map[string]bool{}}
	var rt http.RoundTripper
	if base != nil && base.Transport != nil {
		rt = base.Transport
	} else {
		rt = http.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok {
		t = t.Clone()
		dial := t.DialContext
		if dial == nil {
			dial = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
		}
		connect := h.opts.ConnectTimeout
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, connect)
			defer cancel()
			return dial(ctx, network, addr)
		}
		t.TLSHandshakeTimeout = h.opts.ConnectTimeout
		t.ResponseHeaderTimeout = h.opts.HeaderTimeout
		rt = t
	}
	h.client = &http.Client{
		Transport:     &tokenTransport{base: rt, h: h},
		CheckRedirect: checkRedirect,
	}
	return h
}

// trust lets the token go to the origin of raw (a server or remote URL
// written in policy.hcl).
func (h *httpClient) trust(raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return
	}
	h.mu.Lock()
	h.trusted[originOf(u)] = true
	h.mu.Unlock()
}

// withholdReason says why the token may not go to u ("" when it may).
func (h *httpClient) withholdReason(u *url.URL) string {
	h.mu.Lock()
	trusted := h.trusted[originOf(u)]
	h.mu.Unlock()
	switch {
	case !trusted:
		return fmt.Sprintf("%s is sent only to the servers and remote URLs policy.hcl names, and %s is not one of them", TokenEnv, originOf(u))
	case u.Scheme != "https" && !isLoopback(u.Hostname()):
		return fmt.Sprintf("%s is not sent over plain http (%s) except to a loopback address; use https", TokenEnv, originOf(u))
	}
	return ""
}

func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return &redirectError{fmt.Sprintf("stopped after %d redirects", maxRedirects)}
	}
	if prev := via[len(via)-1]; prev.URL.Scheme == "https" && req.URL.Scheme != "https" {
		return &redirectError{fmt.Sprintf("refused a redirect from https to %s (%s)", req.URL.Scheme, redactURL(req.URL.String()))}
	}
	return nil
}

// tokenTransport adds the token to each hop that may have it: a request
// (or a redirect) to the origin its GET started at, when that origin is
// trusted and the connection is https or loopback.
type tokenTransport struct {
	base http.RoundTripper
	h    *httpClient
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start, _ := req.Context().Value(startOrigin{}).(string)
	if t.h.token != "" && start != "" && originOf(req.URL) == start && t.h.withholdReason(req.URL) == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.h.token)
	}
	return t.base.RoundTrip(req)
}

// get fetches u, retrying what may pass (see HTTPOptions.Attempts).
func (h *httpClient) get(ctx context.Context, u string) ([]byte, error) {
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return nil, &fetchError{URL: u, Err: fmt.Errorf("not an http or https URL")}
	}
	withheld := ""
	if h.token != "" {
		withheld = h.withholdReason(parsed)
	}
	ctx = context.WithValue(ctx, startOrigin{}, originOf(parsed))
	delay := h.opts.RetryDelay
	for attempt := 1; ; attempt++ {
		b, retry, err := h.once(ctx, u)
		if err == nil {
			return b, nil
		}
		if !retry || attempt >= h.opts.Attempts || ctx.Err() != nil {
			n := 0
			if retry {
				n = attempt
			}
			var se *httpStatusError
			if errors.As(err, &se) {
				se.Attempts, se.Withheld = n, withheld
				return nil, se
			}
			return nil, &fetchError{URL: u, Err: err, Attempts: n}
		}
		select {
		case <-ctx.Done():
			return nil, &fetchError{URL: u, Err: ctx.Err(), Attempts: attempt}
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// once is one attempt; retry says whether another may succeed.
func (h *httpClient) once(ctx context.Context, u string) (b []byte, retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, h.opts.TotalTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	// explain turns a transport error into a sentence and says whether to
	// try again.
	explain := func(err error) (bool, error) {
		var re *redirectError
		switch {
		case errors.As(err, &re):
			return false, re
		case ctx.Err() != nil:
			return false, ctx.Err()
		case actx.Err() != nil:
			return true, fmt.Errorf("no complete answer within %s", h.opts.TotalTimeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return !permanent(err), err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		retry, err := explain(err)
		return nil, retry, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		retry := resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return nil, retry, &httpStatusError{URL: resp.Request.URL.String(), Status: resp.StatusCode, Text: strings.TrimSpace(string(t))}
	}
	max := h.opts.MaxDocument
	if resp.ContentLength > max {
		return nil, false, fmt.Errorf("the answer is larger than %d bytes", max)
	}
	b, err = io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		retry, err := explain(err)
		return nil, retry, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(b)) > max {
		return nil, false, fmt.Errorf("the answer is larger than %d bytes", max)
	}
	return b, false, nil
}

// permanent reports whether a transport error will not pass by trying
// again: a certificate that does not verify, a name that does not resolve.
func permanent(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var dns *net.DNSError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) ||
		(errors.As(err, &dns) && dns.IsNotFound)
}

// explainHTTP turns a fetch error into a sentence naming what was asked for.
func explainHTTP(err error, what string) string {
	var se *httpStatusError
	if errors.As(err, &se) {
		switch se.Status {
		case http.StatusNotFound:
			return fmt.Sprintf("the server has no %s (%s)", what, se)
		case http.StatusUnauthorized, http.StatusForbidden:
			if se.Withheld != "" {
				return fmt.Sprintf("the server refused to give %s (%s); %s", what, se, se.Withheld)
			}
			return fmt.Sprintf("the server refused to give %s (%s); set %s to a token the server accepts", what, se, TokenEnv)
		}
		return fmt.Sprintf("fetching %s failed: %s", what, se)
	}
	return fmt.Sprintf("fetching %s failed: %s", what, err)
}

func joinURL(base string, parts ...string) string {
	return strings.TrimRight(base, "/") + "/" + strings.Join(parts, "/")
}
