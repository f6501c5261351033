package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// The process's runtime profiles are served at /debug/pprof/ behind the admin token, refused as
// the admin routes refuse, and not served at all without an admin token configured.
func TestProfiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	get := func(c *apitest.Client, path, header string) *apitest.Response {
		t.Helper()
		return c.Do(apitest.Request{Method: "GET", Path: path, Header: map[string]string{"Authorization": header}})
	}
	admin := "Bearer " + adminToken
	refused := []struct {
		name, header string
		status       int
		code         string
	}{
		{"NoToken", "", http.StatusUnauthorized, "missing_api_key"},
		{"WrongToken", "Bearer not-the-token", http.StatusUnauthorized, "invalid_admin_token"},
		{"AccountKeyIsNotAdmin", "Bearer " + b.key, http.StatusUnauthorized, "invalid_admin_token"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
				res := get(b.client, path, tc.header)
				expect(t, res, tc.status, tc.code)
				if bytes.Contains(res.Body, []byte("goroutine")) {
					t.Fatalf("%s answered a profile: %s", path, res.Body)
				}
			}
		})
	}
	t.Run("OffWithoutConfiguredToken", func(t *testing.T) {
		off := setup(t, withAdminToken(""))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
			expect(t, get(off.client, path, admin), http.StatusNotFound, "route_not_found")
		}
	})
	t.Run("Index", func(t *testing.T) {
		res := get(b.client, "/debug/pprof/", admin)
		expect(t, res, http.StatusOK, "")
		for _, name := range []string{"goroutine", "heap", "profile"} {
			if !bytes.Contains(res.Body, []byte(name)) {
				t.Fatalf("the index does not list %s: %s", name, res.Body)
			}
		}
	})
	t.Run("GoroutinesAsText", func(t *testing.T) {
		// The goroutine serving this very request is in its profile.
		res := get(b.client, "/debug/pprof/goroutine?debug=1", admin)
		expect(t, res, http.StatusOK, "")
		if body := string(res.Body); !strings.HasPrefix(body, "goroutine profile: total") || !strings.Contains(body, "net/http.(*conn).serve") {
			t.Fatalf("goroutine profile: %.500s", body)
		}
	})
	t.Run("CPUProfile", func(t *testing.T) {
		res := get(b.client, "/debug/pprof/profile?seconds=1", admin)
		expect(t, res, http.StatusOK, "")
		zr, err := gzip.NewReader(bytes.NewReader(res.Body))
		if err != nil {
			t.Fatalf("the CPU profile is not pprof's gzipped protobuf: %v", err)
		}
		if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
			t.Fatalf("the CPU profile: %d bytes, %v", len(raw), err)
		}
	})
	t.Run("TokenAsBasicPassword", func(t *testing.T) {
		req, err := http.NewRequest("GET", b.client.URL+"/debug/pprof/heap?debug=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("admin", adminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "heap profile:") {
			t.Fatalf("heap profile with the token as the Basic password: %d %.300s", res.StatusCode, body)
		}
	})
	t.Run("UnknownProfile", func(t *testing.T) {
		expect(t, get(b.client, "/debug/pprof/nonesuch", admin), http.StatusNotFound, "route_not_found")
	})
}
