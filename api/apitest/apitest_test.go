package apitest_test

import (
	"fmt"
	"net/http"
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
	}{
		{"Conforming", "/healthz", 200, `{"status":"ok"}`, map[string]string{"X-Request-ID": "r"}, false},
		{"WrongBody", "/healthz", 200, `{"status":5}`, map[string]string{"X-Request-ID": "r"}, true},
		{"NoRequestID", "/healthz", 200, `{"status":"ok"}`, nil, true},
		{"UndocumentedStatus", "/healthz", 201, `{"status":"ok"}`, map[string]string{"X-Request-ID": "r"}, true},
		{"UndocumentedRoute", "/v1/undocumented", 200, `{}`, map[string]string{"X-Request-ID": "r"}, true},
		{"ErrorWithoutShape", "/v1/undocumented", 404, `{"message":"no"}`, map[string]string{"X-Request-ID": "r"}, true},
		{"ErrorStatusMismatch", "/v1/undocumented", 404, `{"message":"no","error":{"status":400,"code":"x","message":"no","details":[],"request_id":"r"}}`, map[string]string{"X-Request-ID": "r"}, true},
		{"ErrorWithShape", "/v1/undocumented", 404, `{"message":"no","error":{"status":404,"code":"x","message":"no","details":[],"request_id":"r"}}`, map[string]string{"X-Request-ID": "r"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
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
