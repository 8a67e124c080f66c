package files

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toquehq/toque/resources/internal/props"
)

// This file is which addresses a download may connect to. A plan
// downloads (remote_file without checksum) and shows what it got, so a
// download server that redirects toque to the host's own services (a
// localhost admin port, the cloud metadata service at 169.254.169.254)
// would publish their answers in the plan, its JSON and the pull request
// comment. The rules:
//
//   - An internal address (internalKind: loopback, link-local, private,
//     shared, unspecified, multicast, broadcast) is refused unless the
//     resource sets allow_internal, for an internal mirror.
//   - Even with allow_internal, a redirect chain that has reached an
//     external address never goes on to an internal one: only a chain that
//     stayed inside may.
//   - The check is made on the address the socket connects to (the
//     dialer's Control, after name resolution), so a name that resolves to
//     one address for a check and another for the connection (DNS
//     rebinding) gains nothing. Keep-alives are off, so every request of
//     a chain dials, and is checked, anew.
//   - Behind a proxy (from the environment) the proxy connects, not toque:
//     toque checks the addresses the URL's host resolves to on its side (a
//     name it cannot resolve is the proxy's to resolve), and does not check
//     the proxy's own address, which the administrator chose. A proxy that
//     must not reach internal addresses has to refuse them itself.

// netHooks are what tests change in how a download connects.
type netHooks struct {
	// external lists addresses treated as external though they are not:
	// the tests' loopback servers that stand for servers on the internet.
	external map[netip.AddrPort]bool
	// proxy chooses a request's proxy; nil is http.ProxyFromEnvironment.
	proxy func(*http.Request) (*url.URL, error)
}

var (
	metadataV4 = netip.MustParseAddr("169.254.169.254")
	broadcast  = netip.MustParseAddr("255.255.255.255")
	thisNet    = netip.MustParsePrefix("0.0.0.0/8")
	sharedV4   = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal  = netip.MustParsePrefix("fec0::/10")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// internalKind says what kind of internal address a is ("a loopback
// address"), "" for an address on the internet. An IPv6 address that
// carries an IPv4 one (mapped, NAT64, 6to4) is judged by it.
func internalKind(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsUnspecified() || thisNet.Contains(a):
		return "an unspecified address (this host)"
	case a.IsLoopback():
		return "a loopback address"
	case a == metadataV4:
		return "a link-local address: the cloud instance metadata service's"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a == broadcast:
		return "the broadcast address"
	case a.IsPrivate():
		return "a private address"
	case sharedV4.Contains(a):
		return "a shared address (carrier-grade NAT, which clouds use inside: 100.100.100.200 is a metadata service)"
	case siteLocal.Contains(a):
		return "a site-local address"
	case nat64.Contains(a):
		b := a.As16()
		return internalKind(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		b := a.As16()
		return internalKind(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return ""
}

// hopKey is the context key of a download's hopState.
type hopKey struct{}

// hopState is one redirect chain of one download: the policy, and what
// the chain has connected to so far. The transport reaches it through the
// request's context, in the proxy function and the dialer.
type hopState struct {
	allowInternal bool
	hooks         *netHooks

	mu sync.Mutex
	// externalSeen is set once the chain has connected to (or, through a
	// proxy, asked for) an external address.
	externalSeen bool
	// url is the (redacted) URL being requested; redirected is set from
	// the first redirect on.
	url        string
	redirected bool
	// proxy is the address (host:port) of the current request's proxy,
	// "" without one.
	proxy string
}

func hopOf(ctx context.Context) *hopState {
	h, _ := ctx.Value(hopKey{}).(*hopState)
	return h
}

// redirect records the chain's next URL.
func (h *hopState) redirect(u *url.URL) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.url, h.redirected = shownURL(u), true
}

// allow checks one address the chain is about to connect to (or, through
// a proxy, to ask for).
func (h *hopState) allow(ap netip.AddrPort) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := ap.Addr().Unmap()
	kind := internalKind(a)
	if kind == "" || h.hooks.external[netip.AddrPortFrom(a, ap.Port())] {
		return nil
	}
	if h.allowInternal && !h.externalSeen {
		return nil
	}
	return &internalAddressError{url: h.url, addr: a, kind: kind, redirected: h.redirected, fromExternal: h.externalSeen}
}

// reached records an address the chain connected to.
func (h *hopState) reached(ap netip.AddrPort) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := ap.Addr().Unmap()
	if internalKind(a) == "" || h.hooks.external[netip.AddrPortFrom(a, ap.Port())] {
		h.externalSeen = true
	}
}

// internalAddressError is a connection the policy refused.
type internalAddressError struct {
	url          string
	addr         netip.Addr
	kind         string
	redirected   bool
	fromExternal bool
}

func (e *internalAddressError) Error() string {
	what := fmt.Sprintf("goes to %s (%s)", e.addr, e.kind)
	if e.redirected {
		what = fmt.Sprintf("redirected to %s, at %s (%s)", e.url, e.addr, e.kind)
	}
	if e.fromExternal {
		return what + "; toque does not follow a redirect from an external address to an internal one, even with allow_internal. Nothing was requested from it"
	}
	return what + "; toque downloads only from addresses on the internet unless the resource sets allow_internal = true (for an internal mirror). Nothing was requested from it"
}

// dialer connects a download's requests: the address each socket is
// about to connect to is checked (Control runs after name resolution,
// once per address tried), and the address it connected to recorded. A
// dial to the current request's proxy is not checked.
func dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	base := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h := hopOf(ctx)
		if h == nil {
			// Every download carries its chain; a dial without one is
			// a bug, refused rather than unchecked.
			return nil, fmt.Errorf("dialing %s: no download policy (a bug in toque)", addr)
		}
		h.mu.Lock()
		toProxy := h.proxy != "" && h.proxy == addr
		h.mu.Unlock()
		d := *base
		if !toProxy {
			d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("dialing %s: cannot read the address %q", addr, address)
				}
				return h.allow(ap)
			}
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if !toProxy {
			if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
				h.reached(ta.AddrPort())
			}
		}
		return c, nil
	}
}

// proxyFor wraps the function that chooses a request's proxy: when a
// request goes through one, the URL's host is checked as toque resolves
// it (the proxy, which connects, may resolve it otherwise: see above).
func proxyFor(choose func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		h := hopOf(req.Context())
		if h == nil {
			return nil, fmt.Errorf("no download policy (a bug in toque)")
		}
		p, err := choose(req)
		if err != nil || p == nil {
			h.mu.Lock()
			h.proxy = ""
			h.mu.Unlock()
			return p, err
		}
		if err := checkThroughProxy(req.Context(), h, req.URL); err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.proxy = proxyAddr(p)
		h.mu.Unlock()
		return p, nil
	}
}

// checkThroughProxy checks the addresses u's host resolves to here.
func checkThroughProxy(ctx context.Context, h *hopState, u *url.URL) error {
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil // the proxy resolves it: nothing toque can check
	}
	port := defaultPort(u.Scheme)
	if p := u.Port(); p != "" {
		fmt.Sscan(p, &port)
	}
	for _, a := range addrs {
		if err := h.allow(netip.AddrPortFrom(a, port)); err != nil {
			return err
		}
	}
	for _, a := range addrs {
		h.reached(netip.AddrPortFrom(a, port))
	}
	return nil
}

// proxyAddr is the host:port the transport dials for proxy p.
func proxyAddr(p *url.URL) string {
	port := p.Port()
	if port == "" {
		port = fmt.Sprint(defaultPort(p.Scheme))
	}
	return net.JoinHostPort(p.Hostname(), port)
}

func defaultPort(scheme string) uint16 {
	switch scheme {
	case "https":
		return 443
	case "socks5", "socks5h":
		return 1080
	}
	return 80
}

// shownURL is u as plans and errors show it: its user and password
// hidden, and its query string too (a redirect's signed URL carries a
// token the recipe never wrote, so no sensitive() can mark it).
func shownURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	q := c.RawQuery != "" || c.ForceQuery
	c.RawQuery, c.ForceQuery = "", false
	s := c.String()
	if q {
		s += "?…"
	}
	if u.User != nil {
		s = strings.Replace(s, "://", "://***@", 1)
	}
	return props.RedactURL(s)
}
