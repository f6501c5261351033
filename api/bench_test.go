package api_test

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkRequest measures an authenticated, rate-limited read (key lookup in MongoDB, GCRA in
// Redis, project read in MongoDB) against the baseline of /healthz through the same router and
// HTTP stack. docs/BENCHMARKS.md reports the ratio.
func BenchmarkRequest(b *testing.B) {
	bb := setup(b, withRateLimit(1_000_000_000))
	cases := []struct {
		name, path, key string
	}{
		{"Healthz", "/healthz", ""},
		{"AuthenticatedRead", "/v1/projects/" + bb.project.ID, bb.key},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req, _ := http.NewRequest("GET", bb.client.URL+c.path, nil)
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			for b.Loop() {
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
		})
	}
}
