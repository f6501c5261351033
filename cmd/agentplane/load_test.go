package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// `agentplane load` holds a mixed workload against the roles and reports it; with nothing wrong
// no request fails and the work it queued (ingestion, webhooks) catches up.
func TestLoad(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	env["AGENTPLANE_ALLOW_PRIVATE_NETWORKS"] = "true"
	env["AGENTPLANE_RATE_LIMIT"] = "0"
	getenv := func(k string) string { return env[k] }
	if err := run(context.Background(), []string{"migrate"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	key, abusiveKey := createAccount(t, env), createAccount(t, env)
	api := start(t, env, "api")
	addr := waitFor(t, api.stderr, listening, api)[1]
	workerEnv := maps.Clone(env)
	workerEnv["AGENTPLANE_METRICS_ADDR"] = "127.0.0.1:0"
	w := start(t, workerEnv, "worker")
	ops := waitFor(t, w.stderr, opsListening, w)[1]
	start(t, env, "scheduler")

	var out bytes.Buffer
	if err := run(context.Background(), []string{"load", "--base", "http://" + addr, "--key", key, "--clients", "4", "--abusive", "1",
		"--abusive-key", abusiveKey, "--abusive-rate", "0", "--duration", "3s"},
		getenv, &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if testing.Verbose() {
		t.Log(out.String())
	}
	report := out.String()
	for _, want := range []string{"| chat | ", "| agent_run | ", "| deal_update | ", "error rate: 0.000%", "settled in",
		"| abuse_slow_body | ", "| abuse_concurrent_updates | ", "unexpected abusive answers: 0 map[]",
		"| RSS | ", "| Go heap live after the last collection | ", "memory in the second half: heap "} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if regexp.MustCompile(`\| all \| 0 \|`).MatchString(report) {
		t.Errorf("no request was made:\n%s", report)
	}
	// The worker counted the text it ingested: five notes of the setup at least.
	metricsUntil(t, ops, `agentplane_ingested_bytes_total{type="text"} `)
	_, metrics := get(t, "http://"+ops+"/metrics")
	m := regexp.MustCompile(`agentplane_ingested_bytes_total\{type="text"\} (\S+)`).FindStringSubmatch(metrics)
	if n, _ := strconv.ParseFloat(m[1], 64); n < float64(5*len(loadText(0))-50) {
		t.Errorf("ingested %v bytes of text, want at least those of the five notes", n)
	}
}
