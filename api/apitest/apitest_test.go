package apitest_test

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}

// The client catches responses that break the OpenAPI document.
func TestClientHoldsResponsesToTheDocument(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		status  int
		body    string
		headers map[string]string
		broken  bool
		// contentType is the answer's, application/json when empty.
		contentType string
	}{
		{"Conforming", "/healthz", 200, `{"status":"ok"}`, map[string]string{"X-Request-ID": "r"}, false, ""},
		{"WrongBody", "/healthz", 200, `{"status":5}`, map[string]string{"X-Request-ID": "r"}, true, ""},
		{"NotJSON", "/healthz", 200, `{"status":`, map[string]string{"X-Request-ID": "r"}, true, ""},
		{"UndocumentedContentType", "/healthz", 200, `{"status":"ok"}`, map[string]string{"X-Request-ID": "r"}, true, "text/plain"},
		{"NoRequestID", "/healthz", 200, `{"status":"ok"}`, nil, true, ""},
		{"UndocumentedStatus", "/healthz", 201, `{"status":"ok"}`, map[string]string{"X-Request-ID": "r"}, true, ""},
		{"UndocumentedRoute", "/v1/undocumented", 200, `{}`, map[string]string{"X-Request-ID": "r"}, true, ""},
		{"ErrorWithoutShape", "/v1/undocumented", 404, `{"message":"no"}`, map[string]string{"X-Request-ID": "r"}, true, ""},
		{"ErrorStatusMismatch", "/v1/undocumented", 404, `{"message":"no","error":{"status":400,"code":"x","message":"no","details":[],"request_id":"r"}}`, map[string]string{"X-Request-ID": "r"}, true, ""},
		{"ErrorWithShape", "/v1/undocumented", 404, `{"message":"no","error":{"status":404,"code":"x","message":"no","details":[],"request_id":"r"}}`, map[string]string{"X-Request-ID": "r"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", cmp.Or(tt.contentType, "application/json"))
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			rec := &recorder{TB: t}
			apitest.New(rec, h).Do(apitest.Request{Method: "GET", Path: tt.path})
			if broken := len(rec.errors) > 0; broken != tt.broken {
				t.Fatalf("broken = %v, want %v: %v", broken, tt.broken, rec.errors)
			}
		})
	}
}

// Event streams are held event by event to the schemas the document's x-events names, through
// Do and through the checking transport of others' clients.
func TestClientHoldsEventStreamsToTheDocument(t *testing.T) {
	chunk := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`
	tests := []struct {
		name, body string
		broken     bool
	}{
		{"Conforming", "data: " + chunk + "\n\n: ping\n\ndata: [DONE]\n\n", false},
		{"ChunkBreaksItsSchema", `data: {"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}` + "\n\ndata: [DONE]\n\n", true},
		{"NotJSONNorDone", "data: " + chunk + "\n\ndata: [END]\n\n", true},
		{"UndocumentedEvent", "event: surprise\ndata: " + chunk + "\n\n", true},
	}
	for _, tt := range tests {
		for _, via := range []string{"Do", "HTTP"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("X-Request-ID", "r")
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write([]byte(tt.body))
				})
				rec := &recorder{TB: t}
				c := apitest.New(rec, h)
				if via == "Do" {
					c.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Body: map[string]any{}})
				} else {
					res, err := c.HTTP(nil).Post(c.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
					if err != nil {
						t.Fatal(err)
					}
					_ = res.Body.Close()
				}
				if broken := len(rec.errors) > 0; broken != tt.broken {
					t.Fatalf("broken = %v, want %v: %v", broken, tt.broken, rec.errors)
				}
			})
		}
	}
}
