// Package apitest is the HTTP test client of the API: it sends real requests to a real server
// and holds every response it receives to the OpenAPI document.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentplane/agentplane/api"
)

// Client talks to one test server.
type Client struct {
	t    testing.TB
	URL  string
	doc  *document
	http *http.Client
}

// document is the OpenAPI document and what holding answers to it needs, made once per process
// and shared by every client: its router, and its schemas compiled once each. Loading it for
// each client, and kin-openapi compiling a schema at each validation (it does under OpenAPI
// 3.1), took a fifth of the API tests' CPU.
type document struct {
	spec   *openapi3.T
	router routers.Router

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// documentURL names the document among the compiler's resources.
const documentURL = "https://agentplane.invalid/openapi.json"

var loadDocument = sync.OnceValues(func() (*document, error) {
	spec, err := api.OpenAPI()
	if err != nil {
		return nil, err
	}
	spec.Servers = nil
	router, err := legacy.NewRouter(spec)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	tree, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.DefaultDraft(jsonschema.Draft2020)
	compiler.AssertFormat()
	if err := compiler.AddResource(documentURL, tree); err != nil {
		return nil, err
	}
	return &document{spec: spec, router: router, compiler: compiler, compiled: map[string]*jsonschema.Schema{}}, nil
})

// schema is the compiled schema at ref, a reference into the document ("#/components/...").
func (d *document) schema(ref string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.compiled[ref]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(documentURL + ref)
	if err != nil {
		return nil, err
	}
	d.compiled[ref] = s
	return s, nil
}

// pointer is the reference of the document's node at path, its keys escaped as a JSON pointer
// in a URL's fragment.
func pointer(path ...string) string {
	ref := "#"
	for _, key := range path {
		ref += "/" + url.PathEscape(pointerEscape.Replace(key))
	}
	return ref
}

// pointerEscape escapes a key of a JSON pointer.
var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// New serves h on a loopback port for the test's lifetime and returns a client of it.
func New(t testing.TB, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return Dial(t, srv.URL)
}

// Dial returns a client of a server already running at baseURL.
func Dial(t testing.TB, baseURL string) *Client {
	t.Helper()
	doc, err := loadDocument()
	if err != nil {
		t.Fatal(err)
	}
	return &Client{t: t, URL: strings.TrimRight(baseURL, "/"), doc: doc, http: &http.Client{}}
}

// Request is one request to send. Body is marshalled as JSON unless Raw is set; Raw is sent as
// is, with an unknown length (chunked) when Chunked is true.
type Request struct {
	Method      string
	Path        string
	Key         string
	Body        any
	Raw         []byte
	Chunked     bool
	ContentType string
	Header      map[string]string
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends r, checks the response against the OpenAPI document and returns it; the test fails
// at once when the request cannot be sent or its answer read. Only the test's goroutine may
// call it (FailNow must not be called from another): a goroutine a test starts calls Try.
func (c *Client) Do(r Request) *Response {
	c.t.Helper()
	res, err := c.Try(r)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// Try is Do for any goroutine: a request that cannot be sent, or whose answer cannot be read,
// is its error, for the caller to hand to the test's goroutine; the checks against the document
// report with Errorf, which any goroutine may call.
func (c *Client) Try(r Request) (*Response, error) {
	c.t.Helper()
	var body io.Reader
	contentType := r.ContentType
	switch {
	case r.Raw != nil:
		body = bytes.NewReader(r.Raw)
		if r.Chunked {
			body = io.MultiReader(body)
		}
	case r.Body != nil:
		b, err := json.Marshal(r.Body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
		}
		body = bytes.NewReader(b)
		if contentType == "" {
			contentType = "application/json"
		}
	}
	req, err := http.NewRequest(r.Method, c.URL+r.Path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if r.Key != "" {
		req.Header.Set("Authorization", "Bearer "+r.Key)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading body: %w", r.Method, r.Path, err)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: got}
	c.check(req, out)
	return out, nil
}

// HTTP is an HTTP client whose every answer is held to the document as Do's are, for the
// clients of others (OpenAI's, MCP's) that tests drive the API with; next sends the requests
// (http.DefaultTransport when nil). An answer is checked once its body is read to its end, so
// a stream reaches its reader as it comes; a body closed before its end is read to its end
// first, and one cut short (its request cancelled) is not checked.
func (c *Client) HTTP(next http.RoundTripper) *http.Client {
	if next == nil {
		next = http.DefaultTransport
	}
	return &http.Client{Transport: checking{c: c, next: next}}
}

// checking is the transport of HTTP.
type checking struct {
	c    *Client
	next http.RoundTripper
}

func (k checking) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := k.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &checkedBody{c: k.c, req: r, res: res, body: res.Body}
	return res, nil
}

// checkedBody keeps what its reader read and checks the answer at its end.
type checkedBody struct {
	c    *Client
	req  *http.Request
	res  *http.Response
	body io.ReadCloser
	read bytes.Buffer
	done bool
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.read.Write(p[:n])
	if err == io.EOF && !b.done {
		b.done = true
		b.c.check(b.req, &Response{Status: b.res.StatusCode, Header: b.res.Header, Body: b.read.Bytes()})
	}
	return n, err
}

func (b *checkedBody) Close() error {
	if !b.done {
		_, _ = io.Copy(io.Discard, b)
	}
	return b.body.Close()
}

// check holds the response to the document: a documented route must answer a documented status
// with a body of its schema; any error, on any route, must have the error shape.
func (c *Client) check(req *http.Request, res *Response) {
	c.t.Helper()
	if res.Header.Get("X-Request-ID") == "" {
		c.t.Errorf("%s %s: no X-Request-ID header", req.Method, req.URL.Path)
	}
	if res.Status >= 400 {
		c.checkError(req, res)
	}
	route, params, err := c.doc.router.FindRoute(req)
	if err != nil {
		if res.Status < 400 {
			c.t.Errorf("%s %s answered %d but is not in the OpenAPI document", req.Method, req.URL.Path, res.Status)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  res.Status,
		Header:  res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: true},
	}
	err = openapi3filter.ValidateResponse(context.Background(), in)
	if err == nil {
		err = c.checkBody(route, res)
	}
	if err != nil {
		c.t.Errorf("%s %s answered %d, which breaks the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, res.Status, err, res.Body)
		return
	}
	c.checkEvents(req, res, route)
}

// checkBody holds the body of a documented answer to the schema of its status and content type
// (its status, headers and content type having been checked): JSON as JSON, files (zip
// downloads) not at all, any other text as a string.
func (c *Client) checkBody(route *routers.Route, res *Response) error {
	switch res.Status {
	case http.StatusNotModified, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return nil // as kin-openapi: redirects and "not modified" are not checked
	}
	responses := route.Operation.Responses
	key := strconv.Itoa(res.Status)
	if responses.Value(key) == nil {
		key = key[:1] + "XX"
	}
	if responses.Value(key) == nil {
		key = "default"
	}
	ref := responses.Value(key)
	if ref == nil || ref.Value == nil || len(ref.Value.Content) == 0 {
		return nil
	}
	ct := res.Header.Get("Content-Type")
	media := ref.Value.Content.Get(ct)
	if media == nil {
		return fmt.Errorf("content type %q is not the response's", ct)
	}
	if media.Schema == nil || media.Schema.Value == nil || media.Schema.Value.Format == "binary" {
		return nil
	}
	schemaRef := media.Schema.Ref
	if schemaRef == "" {
		base := pointer("paths", route.Path, strings.ToLower(route.Method), "responses", key)
		if ref.Ref != "" {
			base = ref.Ref
		}
		for name, m := range ref.Value.Content {
			if m == media {
				schemaRef = base + pointer("content", name, "schema")[1:]
			}
		}
	}
	var value any = string(res.Body)
	if mediaType, _, _ := strings.Cut(ct, ";"); mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") {
		var err error
		if value, err = jsonschema.UnmarshalJSON(bytes.NewReader(res.Body)); err != nil {
			return fmt.Errorf("the body is not JSON: %w", err)
		}
	}
	return c.validate(schemaRef, value)
}

// validate holds value to the schema at ref.
func (c *Client) validate(ref string, value any) error {
	schema, err := c.doc.schema(ref)
	if err != nil {
		return fmt.Errorf("schema %s: %w", ref, err)
	}
	return schema.Validate(value)
}

// checkEvents holds each event of an event stream (whose body checkBody held as text) to the
// schema the stream's x-events names for the event's name ("message" for events of no name):
// its JSON, or its text when it is not JSON.
func (c *Client) checkEvents(req *http.Request, res *Response, route *routers.Route) {
	c.t.Helper()
	ct := res.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		return
	}
	response := route.Operation.Responses.Status(res.Status)
	if response == nil || response.Value == nil {
		return
	}
	media := response.Value.Content.Get(ct)
	if media == nil {
		return
	}
	names, ok := media.Extensions["x-events"].(map[string]any)
	if !ok {
		c.t.Errorf("%s %s: the document's event stream has no x-events naming its events' schemas", req.Method, req.URL.Path)
		return
	}
	for i, ev := range Events(res.Body) {
		name, _ := names[ev.Name].(string)
		if c.doc.spec.Components.Schemas[name] == nil {
			c.t.Errorf("%s %s: event %d is %q, which the document's x-events does not name", req.Method, req.URL.Path, i, ev.Name)
			continue
		}
		var v any = ev.Data
		if json.Unmarshal([]byte(ev.Data), &v) != nil {
			v = ev.Data
		}
		if err := c.validate(pointer("components", "schemas", name), v); err != nil {
			c.t.Errorf("%s %s: event %d (%s) breaks the schema %s: %v\ndata: %s", req.Method, req.URL.Path, i, ev.Name, name, err, ev.Data)
		}
	}
}

// Event is one event of an event stream: its name ("message" when it has none) and its data.
type Event struct {
	ID, Name, Data string
}

// Events are the events of an event stream's text, in order; comments are left out.
func Events(stream []byte) []Event {
	var out []Event
	for block := range strings.SplitSeq(strings.ReplaceAll(string(stream), "\r\n", "\n"), "\n\n") {
		ev, data, seen := Event{Name: "message"}, []string{}, false
		for line := range strings.SplitSeq(block, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID, seen = value, true
			case "event":
				ev.Name, seen = value, true
			case "data":
				data, seen = append(data, value), true
			}
		}
		if seen {
			ev.Data = strings.Join(data, "\n")
			out = append(out, ev)
		}
	}
	return out
}

// openAIDoor reports whether path is a route of the OpenAI-compatible door, whose errors have
// OpenAI's shape.
func openAIDoor(path string) bool {
	return path == "/v1/chat/completions" || path == "/v1/responses" || path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")
}

func (c *Client) checkError(req *http.Request, res *Response) {
	c.t.Helper()
	schema := "Error"
	if openAIDoor(req.URL.Path) {
		schema = "OpenAIError"
	}
	var v any
	if err := json.Unmarshal(res.Body, &v); err != nil {
		c.t.Errorf("%s %s answered %d with a body that is not JSON: %q", req.Method, req.URL.Path, res.Status, res.Body)
		return
	}
	if err := c.validate(pointer("components", "schemas", schema), v); err != nil {
		c.t.Errorf("%s %s answered %d without the error shape: %v\nbody: %s", req.Method, req.URL.Path, res.Status, err, res.Body)
		return
	}
	if status := v.(map[string]any)["error"].(map[string]any)["status"]; status != float64(res.Status) && !openAIDoor(req.URL.Path) {
		c.t.Errorf("%s %s answered %d but error.status is %v", req.Method, req.URL.Path, res.Status, status)
	}
}

// JSON decodes the body into a map.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding body: %v: %s", err, r.Body)
	}
}

// ErrorCode returns error.code of an error body.
func (r *Response) ErrorCode(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	r.Decode(t, &e)
	return e.Error.Code
}
