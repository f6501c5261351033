package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// A worker serves its metrics at AGENTPLANE_METRICS_ADDR.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	env["AGENTPLANE_METRICS_ADDR"] = "127.0.0.1:0"
	w := start(t, env, "worker")
	addr := waitFor(t, w.stderr, regexp.MustCompile(`"msg":"metrics listening"[^\n]*"addr":"([^"]+)"`), w)[1]
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
