package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// TokenEnv names the environment variable whose value, when set, is sent
// to policy servers and remote lock URLs as a bearer token.
const TokenEnv = "TOQUE_POLICY_TOKEN"

// maxDocument bounds what is read from a server for one document.
const maxDocument = 256 << 20

// httpStatusError is a non-200 answer.
type httpStatusError struct {
	URL    string
	Status int
	Text   string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("GET %s: %d %s", redactURL(e.URL), e.Status, http.StatusText(e.Status))
}

// httpClient fetches documents from policy servers. TLS certificates are
// verified (the client's transport decides; the default one verifies).
type httpClient struct {
	client *http.Client
	token  string
}

func (h *httpClient) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redactURL(u), err)
	}
	req.Header.Set("Accept", "application/json")
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	c := h.client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("GET %s: %w", redactURL(u), ue.Unwrap())
		}
		return nil, fmt.Errorf("GET %s: %w", redactURL(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &httpStatusError{URL: u, Status: resp.StatusCode, Text: strings.TrimSpace(string(b))}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redactURL(u), err)
	}
	if len(b) > maxDocument {
		return nil, fmt.Errorf("GET %s: the answer is larger than %d bytes", redactURL(u), maxDocument)
	}
	return b, nil
}

// explainHTTP turns a fetch error into a sentence naming what was asked for.
func explainHTTP(err error, what string) string {
	var se *httpStatusError
	if errors.As(err, &se) {
		switch se.Status {
		case http.StatusNotFound:
			return fmt.Sprintf("the server has no %s (GET %s: 404 Not Found)", what, redactURL(se.URL))
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("the server refused to give %s (GET %s: %d %s); set %s to a token the server accepts", what, redactURL(se.URL), se.Status, http.StatusText(se.Status), TokenEnv)
		}
		return fmt.Sprintf("fetching %s failed: %s", what, se)
	}
	return fmt.Sprintf("fetching %s failed: %s", what, err)
}

func joinURL(base string, parts ...string) string {
	return strings.TrimRight(base, "/") + "/" + strings.Join(parts, "/")
}
