package appstoreserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"time"

	"appstoreserver.dev/appstoreserver/internal/capi"
)

// ClientOptions are the API client's options beyond Apple's constructor.
type ClientOptions struct {
	// BaseURL replaces Apple's base URLs (e.g. a test server); "" = Apple's.
	BaseURL string
	// Timeout (0: 30 s) is a deadline for the whole call (each page of a paginated one): the external signer,
	// rate-limit and retry waits and every exchange (given the time left) count against it; a wait past it is not
	// made and a Sign still busy at it is abandoned: *APIError with Reason ReasonDeadlineExceeded.
	Timeout time.Duration
	// MaxRetries retries HTTP 429 and Apple's retryable codes (0: off, at most 100), waiting InitialBackoff (0:
	// 500 ms), doubling up to MaxBackoff (0: 30 s), or until Retry-After.
	MaxRetries     int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// SandboxFallback asks Sandbox again when Production does not know a transaction id (Production clients only);
	// SandboxBaseURL replaces Apple's Sandbox URL for it.
	SandboxFallback bool
	SandboxBaseURL  string
	// RateLimit keeps to Apple's published per-endpoint limits (times RateLimitSharePercent / 100, 0 = 100),
	// waiting up to RateLimitMaxWait (0: 10 s) for a slot.
	RateLimit             bool
	RateLimitMaxWait      time.Duration
	RateLimitSharePercent int
	// HTTPClient sends the requests (nil: a client of its own). Redirects are never followed.
	HTTPClient *http.Client
}

// AppStoreServerAPIClient calls the App Store Server API and the Advanced Commerce API (Apple's
// AppStoreServerAPIClient): the library builds each request with a fresh bearer token, and decides retries,
// Retry-After, the Sandbox fallback, the rate limit and the following pages; this client only sends over net/http
// and waits. Safe for concurrent use.
type AppStoreServerAPIClient struct {
	h      handle[capi.ApiClient]
	key    *SigningKey
	ownKey bool
	http   *http.Client
	now    func() int64                                     // ms since 1970 (tests: a scripted clock)
	sleep  func(ctx context.Context, d time.Duration) error // tests: a scripted sleep
}

// NewAppStoreServerAPIClient makes a client as Apple's libraries do: the .p8 key, its key ID, the issuer ID, the
// bundle ID and the environment (not Xcode).
func NewAppStoreServerAPIClient(signingKey []byte, keyID, issuerID, bundleID string, environment Environment) (*AppStoreServerAPIClient, error) {
	key, err := NewSigningKey(signingKey, keyID, issuerID, bundleID)
	if err != nil {
		return nil, err
	}
	c, err := NewAppStoreServerAPIClientWithKey(key, environment, nil)
	if err != nil {
		key.Close()
		return nil, err
	}
	c.ownKey = true
	return c, nil
}

func durationMs(d time.Duration, what string, min int64) (uint32, error) {
	ms := int64(d / time.Millisecond)
	if ms < min || ms > 1<<32-1 {
		return 0, argError(what, "is out of range")
	}
	return uint32(ms), nil
}

// NewAppStoreServerAPIClientWithKey makes a client with a SigningKey (e.g. an external signer's) and options
// (nil: defaults). The client keeps the key open until its own Close.
func NewAppStoreServerAPIClientWithKey(key *SigningKey, environment Environment, o *ClientOptions) (*AppStoreServerAPIClient, error) {
	if key == nil {
		return nil, argError("key", "is nil")
	}
	if o == nil {
		o = &ClientOptions{}
	}
	env := cEnvironment(environment)
	if env == 0 {
		return nil, argError("environment", "is not one of Sandbox, Production, LocalTesting: "+quote(string(environment)))
	}
	if o.MaxRetries < 0 || o.MaxRetries > 100 {
		return nil, argError("MaxRetries", "must be 0-100")
	}
	if o.RateLimitSharePercent < 0 || o.RateLimitSharePercent > 100 {
		return nil, argError("RateLimitSharePercent", "must be 1-100 (0: 100)")
	}
	timeout, initial, max, wait := o.Timeout, o.InitialBackoff, o.MaxBackoff, o.RateLimitMaxWait
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if initial == 0 {
		initial = 500 * time.Millisecond
	}
	if max == 0 {
		max = 30 * time.Second
	}
	if wait == 0 {
		wait = 10 * time.Second
	}
	timeoutMs, err := durationMs(timeout, "Timeout", 1)
	if err != nil {
		return nil, err
	}
	initialMs, err := durationMs(initial, "InitialBackoff", 0)
	if err != nil {
		return nil, err
	}
	maxMs, err := durationMs(max, "MaxBackoff", 0)
	if err != nil {
		return nil, err
	}
	waitMs, err := durationMs(wait, "RateLimitMaxWait", 0)
	if err != nil {
		return nil, err
	}
	opts, err := capi.ApiClientOptionsNew()
	if err != nil {
		return nil, plainError(err)
	}
	defer capi.ApiClientOptionsFree(opts)
	steps := []func() error{
		func() error { return capi.ApiClientOptionsSetTimeoutMs(opts, timeoutMs) },
		func() error { return capi.ApiClientOptionsSetRetry(opts, uint32(o.MaxRetries), initialMs, maxMs) },
	}
	if o.BaseURL != "" {
		steps = append(steps, func() error { return capi.ApiClientOptionsSetBaseURL(opts, &o.BaseURL) })
	}
	if o.SandboxFallback {
		steps = append(steps, func() error { return capi.ApiClientOptionsSetSandboxFallback(opts, 1, optional(o.SandboxBaseURL)) })
	} else if o.SandboxBaseURL != "" {
		return nil, argError("SandboxBaseURL", "is used only by the Sandbox fallback: set SandboxFallback")
	}
	if o.RateLimit {
		share := o.RateLimitSharePercent
		if share == 0 {
			share = 100
		}
		steps = append(steps, func() error { return capi.ApiClientOptionsSetRateLimit(opts, 1, waitMs, uint32(share)) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, plainError(err)
		}
	}
	kp, ok := key.h.get()
	if !ok {
		return nil, ErrClosed
	}
	p, err := capi.ApiClientNew(kp, env, opts)
	if err == nil {
		key.signer.retain() // the C client holds the key: its signer must outlive the client, whatever the key's Close
	}
	key.h.release()
	if err != nil {
		return nil, plainError(err)
	}
	hc := &http.Client{}
	if o.HTTPClient != nil {
		copied := *o.HTTPClient
		hc = &copied
	}
	hc.CheckRedirect = noRedirects
	c := &AppStoreServerAPIClient{key: key, http: hc, now: func() int64 { return time.Now().UnixMilli() }, sleep: sleepCtx}
	signer := key.signer
	c.h = handle[capi.ApiClient]{p: p, free: func(p capi.ApiClient) {
		capi.ApiClientFree(p)
		signer.release()
	}}
	runtime.SetFinalizer(c, (*AppStoreServerAPIClient).Close)
	return c, nil
}

// Close releases the client (and its key, when the client made it). Calls in progress finish first.
func (c *AppStoreServerAPIClient) Close() error {
	if c == nil {
		return nil
	}
	c.h.close()
	if c.ownKey {
		c.key.Close()
	}
	runtime.KeepAlive(c.key)
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func base64Bytes(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// addQueryModel adds the fields of a query model (e.g. TransactionHistoryRequest) to the parameters.
func addQueryModel(params map[string]any, m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return argError("request", "does not encode as JSON: "+err.Error())
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil // nil model: "null"
	}
	for k, v := range fields {
		params[k] = v
	}
	return nil
}

func decodeAnswer(raw []byte, out any) error {
	if err := unmarshal(raw, out); err != nil {
		return &APIError{Status: VerificationStatusInvalidResponse, Reason: ReasonUndecodableResponse, RetryAfter: -1,
			Message: "the answer does not decode into the Go model: " + err.Error()}
	}
	return nil
}

// call runs one call to its answer and decodes it into out (nil: no body).
func (c *AppStoreServerAPIClient) call(ctx context.Context, endpoint string, params map[string]any, out any) error {
	return c.run(ctx, endpoint, params, func(raw []byte, _ Environment) (bool, error) {
		if out != nil {
			return false, decodeAnswer(raw, out)
		}
		return false, nil
	})
}

func (c *AppStoreServerAPIClient) pages(ctx context.Context, endpoint string, params map[string]any, page func([]byte) (bool, error)) error {
	return c.run(ctx, endpoint, params, func(raw []byte, _ Environment) (bool, error) { return page(raw) })
}

// CallJSON calls an endpoint by name with its parameters object (the C ABI's params_json: path and query
// parameters by name, the request model under "body") and returns the answer's JSON as Apple sent it and the
// environment that answered. For endpoints this version has no method for, and for tests.
func (c *AppStoreServerAPIClient) CallJSON(ctx context.Context, endpoint string, params map[string]any) ([]byte, Environment, error) {
	var out []byte
	var env Environment
	err := c.run(ctx, endpoint, params, func(raw []byte, e Environment) (bool, error) {
		out, env = raw, e
		return false, nil
	})
	return out, env, err
}

// run drives the core's call: SEND (net/http), WAIT (sleep), DONE (page: more pages when it returns true).
func (c *AppStoreServerAPIClient) run(ctx context.Context, endpoint string, params map[string]any,
	page func([]byte, Environment) (bool, error)) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if c == nil {
		return ErrClosed
	}
	pj, err := json.Marshal(params)
	if err != nil {
		return argError("parameters", "do not encode as JSON: "+err.Error())
	}
	p, ok := c.h.get()
	if !ok {
		return ErrClosed
	}
	defer c.h.release()
	pjs := string(pj)
	call, err := capi.ApiCallNew(p, endpoint, &pjs)
	if err != nil {
		return apiError(err)
	}
	defer capi.ApiCallFree(call)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		action, waitMs, err := capi.ApiCallNext(call, c.now())
		if err != nil {
			return apiError(err)
		}
		switch action {
		case capi.ApiActionSend:
			if err := c.send(ctx, call); err != nil {
				return err
			}
		case capi.ApiActionWait:
			if err := c.sleep(ctx, time.Duration(waitMs)*time.Millisecond); err != nil {
				return err
			}
		case capi.ApiActionDone:
			raw, env, _, err := capi.ApiCallAnswer(call)
			if err != nil {
				return apiError(err)
			}
			more, err := page(raw, environmentOfC(env))
			if err != nil || !more || capi.ApiCallHasNextPage(call) == 0 {
				return err
			}
		default:
			return &Error{Status: VerificationStatusInternalError, Reason: ReasonInternal, Message: "unknown driver action"}
		}
	}
}

// send sends the request the driver built and reports the outcome to it.
func (c *AppStoreServerAPIClient) send(ctx context.Context, call capi.ApiCall) error {
	r, err := capi.ApiCallRequest(call)
	if err != nil {
		return apiError(err)
	}
	method, url := capi.ApiRequestMethod(r), capi.ApiRequestURL(r)
	body := capi.ApiRequestBody(r)
	timeout := time.Duration(capi.ApiRequestTimeoutMs(r)) * time.Millisecond
	n := capi.ApiRequestHeaderCount(r)
	headers := make([][2]string, 0, n)
	for i := uint64(0); i < n; i++ {
		headers = append(headers, [2]string{capi.ApiRequestHeaderName(r, i), capi.ApiRequestHeaderValue(r, i)})
	}
	capi.ApiRequestFree(r)
	status, respHeaders, respBody, result, failure := c.exchange(ctx, method, url, headers, body, timeout)
	if err := ctx.Err(); err != nil {
		return err // the caller gave up: the call is abandoned
	}
	if result != capi.TransportResultOk {
		if err := capi.ApiCallReceiveFailure(call, result, &failure); err != nil {
			return apiError(err)
		}
		return nil
	}
	if err := capi.ApiCallReceive(call, int32(status), []byte(respHeaders), respBody, c.now()); err != nil {
		return apiError(err)
	}
	return nil
}

// exchange does one HTTP exchange: status, headers as "Name: value\r\n" lines, body (at most the API limit), or the
// transport result and what went wrong.
func (c *AppStoreServerAPIClient) exchange(ctx context.Context, method, url string, headers [][2]string, body []byte,
	timeout time.Duration) (int, string, []byte, int32, string) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, "", nil, capi.TransportResultFailed, err.Error()
	}
	for _, h := range headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", nil, transportResult(err), err.Error()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, capi.LimitApiResponseBytes+1))
	if err != nil {
		return 0, "", nil, transportResult(err), err.Error()
	}
	if len(data) > capi.LimitApiResponseBytes {
		return 0, "", nil, capi.TransportResultFailed, "the response body exceeds the limit of 16 MiB"
	}
	var sb strings.Builder
	for name, values := range resp.Header {
		for _, v := range values {
			sb.WriteString(name)
			sb.WriteString(": ")
			sb.WriteString(v)
			sb.WriteString("\r\n")
		}
	}
	return resp.StatusCode, sb.String(), data, capi.TransportResultOk, ""
}

var _ = errors.New
