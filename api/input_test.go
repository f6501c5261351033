package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// Bad input gets a clear 4xx with the error body, never a 500, and the server keeps serving.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := append([]byte(`{"name":"`), bytes.Repeat([]byte("a"), 2<<20)...)
	big = append(big, '"', '}')
	tests := []struct {
		name        string
		raw         []byte
		contentType string
		chunked     bool
		status      int
		code        string
	}{
		{"MalformedJSON", []byte(`{"name": "x"`), "application/json", false, 400, "malformed_json"},
		{"NotJSON", []byte(`name=x`), "application/json", false, 400, "malformed_json"},
		{"TrailingData", []byte(`{"name": "x"} {"name": "y"}`), "application/json", false, 400, "trailing_data"},
		{"TrailingGarbage", []byte(`{"name": "x"}garbage`), "application/json", false, 400, "trailing_data"},
		{"TopLevelArray", []byte(`[{"name": "x"}]`), "application/json", false, 400, "body_not_object"},
		{"WrongTypeNumber", []byte(`{"name": 5}`), "application/json", false, 422, "invalid_field"},
		{"WrongTypeObject", []byte(`{"name": {"a": 1}}`), "application/json", false, 422, "invalid_field"},
		{"TooLargeWithLength", big, "application/json", false, 413, "body_too_large"},
		{"TooLargeChunked", big, "application/json", true, 413, "body_too_large"},
		{"WrongContentType", []byte(`{"name": "x"}`), "text/plain", false, 415, "unsupported_content_type"},
		{"FormContentType", []byte(`name=x`), "application/x-www-form-urlencoded", false, 415, "unsupported_content_type"},
		{"NoContentType", []byte(`{"name": "x"}`), "", false, 415, "unsupported_content_type"},
		{"Latin1Charset", []byte(`{"name": "x"}`), "application/json; charset=latin1", false, 415, "unsupported_content_type"},
		{"RawNUL", []byte("{\"name\": \"a\x00b\"}"), "application/json", false, 400, "malformed_json"},
		{"EscapedNUL", []byte(`{"name": "a\u0000b"}`), "application/json", false, 422, "invalid_field"},
		{"NULInKey", []byte(`{"na\u0000me": "x"}`), "application/json", false, 422, "invalid_field"},
		{"InvalidUTF8", []byte("{\"name\": \"\xff\xfe\"}"), "application/json", false, 400, "invalid_utf8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key, Raw: tt.raw, ContentType: tt.contentType, Chunked: tt.chunked})
			expect(t, res, tt.status, tt.code)
			if msg := res.JSON(t)["message"]; msg == "" {
				t.Error("no message")
			}
			expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/healthz"}), http.StatusOK, "")
		})
	}
}

// Decoding is lenient about presence: unknown fields, nulls and bodiless GET/DELETE are fine.
func TestLenientDecoding(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("UnknownFieldsIgnored", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key,
			Raw: []byte(`{"name": "p", "type": "text", "forget_after": "1 day", "message": "hi", "tags": ["a"]}`), ContentType: "application/json"})
		expect(t, res, http.StatusOK, "")
	})
	t.Run("UnknownDollarFieldsIgnored", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key,
			Raw: []byte(`{"name": "p", "$where": "1", "meta": [{"$gt": ""}]}`), ContentType: "application/json"})
		expect(t, res, http.StatusOK, "")
	})
	t.Run("NullIsAbsent", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/keys", Key: b.key,
			Raw: []byte(`{"name": null, "top": null}`), ContentType: "application/json"})
		expect(t, res, http.StatusOK, "")
		if name := res.JSON(t)["key"].(map[string]any)["name"]; name != "default" {
			t.Fatalf("name %v, want the default", name)
		}
	})
	t.Run("EmptyBody", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/keys", Key: b.key, ContentType: "application/json"})
		expect(t, res, http.StatusOK, "")
	})
	t.Run("CharsetUTF8", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key,
			Raw: []byte(`{"name": "ünïcødé"}`), ContentType: "application/json; charset=UTF-8"})
		expect(t, res, http.StatusOK, "")
	})
	t.Run("GetWithJSONContentTypeAndNoBody", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key, ContentType: "application/json"})
		expect(t, res, http.StatusOK, "")
	})
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/nothing", Key: b.key}), http.StatusNotFound, "route_not_found")
	expect(t, b.client.Do(apitest.Request{Method: "PATCH", Path: "/v1/projects", Key: b.key}), http.StatusMethodNotAllowed, "method_not_allowed")
	// A trailing slash or a path in other case is not the route: 404 with the error body, never
	// a redirect (whose HTML body no client of this API reads, and which a PUT's client may
	// follow as a GET).
	// A URL longer than the API reads is 414 with the error body (net/http's own answer, 431 in
	// plain text, is left for headers over a megabyte).
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects?project_id=" + strings.Repeat("p", 100<<10), Key: b.key})
	expect(t, res, http.StatusRequestURITooLong, "uri_too_long")
	for _, req := range []apitest.Request{
		{Method: "PUT", Path: "/v1/bot/crm/deals/d1/", Key: b.key, Body: map[string]any{"title": "x"}},
		{Method: "GET", Path: "/V1/Projects", Key: b.key},
	} {
		expect(t, b.client.Do(req), http.StatusNotFound, "route_not_found")
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/healthz", Header: map[string]string{"X-Request-ID": "trace-123"}})
	if got := res.Header.Get("X-Request-ID"); got != "trace-123" {
		t.Errorf("X-Request-ID %q, want the client's", got)
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/nothing", Header: map[string]string{"X-Request-ID": "bad id\twith spaces"}})
	id := res.Header.Get("X-Request-ID")
	if id == "" || strings.Contains(id, " ") {
		t.Errorf("X-Request-ID %q, want a generated one", id)
	}
	if got := res.JSON(t)["error"].(map[string]any)["request_id"]; got != id {
		t.Errorf("error.request_id %v, header %q", got, id)
	}
}

// A value of the wrong JSON type is named by its field and the JSON type it must be, wherever it
// is decoded; no message names a Go type.
func TestTypeErrorsNameTheFieldNotGoTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	botID := b.createBot(t, nil)["id"].(string)
	for _, tt := range []struct {
		name   string
		body   map[string]any
		field  string
		expect string
	}{
		{"top level", map[string]any{"top": []any{1}}, "top", "must be an integer"},
		{"branding object", map[string]any{"branding": map[string]any{"seo": "title"}}, "branding.seo", "must be an object"},
		{"branding array", map[string]any{"branding": map[string]any{"message_greetings": map[string]any{"greetings": "hello"}}},
			"branding.message_greetings.greetings", "must be an array"},
		{"branding not an object", map[string]any{"branding": []any{1}}, "branding", "must be an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.body["project_id"], tt.body["bot_id"] = b.project.ID, botID
			res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key, Body: tt.body})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			e := res.JSON(t)["error"].(map[string]any)
			d := e["details"].([]any)[0].(map[string]any)
			if d["field"] != tt.field || d["problem"] != tt.expect || strings.Contains(e["message"].(string), "Go ") {
				t.Fatalf("error %v, want field %s: %s", e, tt.field, tt.expect)
			}
		})
	}
}
