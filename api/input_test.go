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
		{"DollarKey", []byte(`{"name": "x", "$where": "1"}`), "application/json", false, 422, "invalid_field"},
		{"NestedDollarKey", []byte(`{"name": "x", "meta": [{"$gt": ""}]}`), "application/json", false, 422, "invalid_field"},
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
