package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A body that never arrives does not hold the connection: without a key the answer is 401 at
// once (nobody waits for the body: the server's limit here is an hour, the client's 30 s), and
// with one the body gets its time limit, then 408 with the error body, and the connection is
// closed. A body that does arrive in time, even in pieces, is served as usual.
func TestBodiesThatNeverArrive(t *testing.T) {
	t.Parallel()
	b := setup(t, withBodyTimeout(time.Hour))
	quick := setup(t, withBodyTimeout(time.Second))
	tests := []struct {
		name, path, auth, body string
		status                 int
		code                   string
	}{
		{"no key, admin route", "/v1/admin/accounts", "", `{"na`, http.StatusUnauthorized, "missing_api_key"},
		{"no key", "/v1/projects", "", `{"na`, http.StatusUnauthorized, "missing_api_key"},
		{"bad key", "/v1/projects", "Bearer ap_nope", `{"na`, http.StatusUnauthorized, "invalid_api_key"},
		{"a key, body stops", "/v1/projects", "Bearer " + quick.key, `{"na`, http.StatusRequestTimeout, "body_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			server := b.client.URL
			if tt.status == http.StatusRequestTimeout {
				server = quick.client.URL
			}
			conn := dialServer(t, server)
			req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n", tt.path)
			if tt.auth != "" {
				req += "Authorization: " + tt.auth + "\r\n"
			}
			if _, err := io.WriteString(conn, req+"\r\n"+tt.body); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the body is pending: %v", err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status || body.Error.Code != tt.code || !res.Close {
				t.Fatalf("answer %d %q (connection closed: %v), want %d %q and the connection closed", res.StatusCode, body.Error.Code, res.Close, tt.status, tt.code)
			}
		})
	}
	t.Run("a body in pieces within the limit", func(t *testing.T) {
		t.Parallel()
		conn := dialServer(t, b.client.URL)
		body := `{"name":"slow but in time"}`
		head := fmt.Sprintf("POST /v1/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", b.key, len(body))
		if _, err := io.WriteString(conn, head+body[:5]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := io.WriteString(conn, body[5:]); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Close {
			t.Fatalf("answer %d (closed %v), want 200 on a connection kept alive", res.StatusCode, res.Close)
		}
	})
}

func dialServer(t *testing.T, base string) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	// A bound on the whole exchange, far above the server's: a hang fails the test.
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://") {
		t.Fatalf("base %s", base)
	}
	return conn
}
