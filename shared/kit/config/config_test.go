package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/config"
)

// docs/configuration.md's table is the one Vars renders, so the page cannot drift from what the
// binary reads.
func TestConfigurationPage(t *testing.T) {
	const path = "../../../docs/configuration.md"
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.Page(string(page))
	if err != nil {
		t.Fatal(err)
	}
	if string(page) == want {
		return
	}
	got, exp := strings.Split(string(page), "\n"), strings.Split(want, "\n")
	for i := range min(len(got), len(exp)) {
		if got[i] != exp[i] {
			t.Fatalf("docs/configuration.md differs from config.Vars at line %d (run `go generate ./shared/kit/config`):\n have %s\n want %s", i+1, got[i], exp[i])
		}
	}
	t.Fatalf("docs/configuration.md has %d lines, config.Vars renders %d (run `go generate ./shared/kit/config`)", len(got), len(exp))
}

func TestLoad(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	t.Run("DevDefaults", func(t *testing.T) {
		c, err := config.Load("dev", env())
		if err != nil {
			t.Fatal(err)
		}
		if c.HTTPAddr != "127.0.0.1:8080" || c.MongoURI != "" || c.RedisURL != "" || c.NATSURL != "" || c.DataDir != "./data" {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("APIDefaults", func(t *testing.T) {
		c, err := config.Load("api", env())
		if err != nil {
			t.Fatal(err)
		}
		if c.HTTPAddr != ":8080" || c.MongoURI == "" || c.MaxBodyBytes != 1<<20 || c.RateLimit != 600 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("ConfiguredURLsWinInDev", func(t *testing.T) {
		c, err := config.Load("dev", env("AGENTPLANE_MONGO_URI", "mongodb://db:27017", "AGENTPLANE_REDIS_URL", "redis://r:6379/0", "AGENTPLANE_NATS_URL", "nats://n:4222"))
		if err != nil {
			t.Fatal(err)
		}
		if c.MongoURI != "mongodb://db:27017" || c.RedisURL != "redis://r:6379/0" || c.NATSURL != "nats://n:4222" {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("EndUsersLimits", func(t *testing.T) {
		c, err := config.Load("api", env())
		if err != nil || c.PublicRateLimit != 120 || c.PublicAgentRateLimit != 3000 || len(c.TrustedProxies) != 6 || c.TrustedProxies[0] != "127.0.0.0/8" {
			t.Fatalf("defaults %+v, %v", c, err)
		}
		c, err = config.Load("api", env("AGENTPLANE_PUBLIC_RATE_LIMIT", "0", "AGENTPLANE_PUBLIC_AGENT_RATE_LIMIT", "50", "AGENTPLANE_TRUSTED_PROXIES", "none"))
		if err != nil || c.PublicRateLimit != 0 || c.PublicAgentRateLimit != 50 || c.TrustedProxies != nil {
			t.Fatalf("set %+v, %v", c, err)
		}
		c, err = config.Load("api", env("AGENTPLANE_TRUSTED_PROXIES", " 10.1.0.0/16 , 2001:db8::/32"))
		if err != nil || strings.Join(c.TrustedProxies, " ") != "10.1.0.0/16 2001:db8::/32" {
			t.Fatalf("proxies %q, %v", c.TrustedProxies, err)
		}
		for _, bad := range []string{"10.0.0.1", "everyone", "10.0.0.0/8,", "-1"} {
			name := "AGENTPLANE_TRUSTED_PROXIES"
			if bad == "-1" {
				name = "AGENTPLANE_PUBLIC_RATE_LIMIT"
			}
			if _, err := config.Load("api", env(name, bad)); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: %v", name, bad, err)
			}
		}
	})
	t.Run("TracingOffByDefault", func(t *testing.T) {
		c, err := config.Load("worker", env())
		if err != nil {
			t.Fatal(err)
		}
		if c.TraceEndpoint != "" || c.TraceRatio != 1 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("Tracing", func(t *testing.T) {
		c, err := config.Load("worker", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", "OTEL_TRACES_SAMPLER_ARG", "0.25"))
		if err != nil {
			t.Fatal(err)
		}
		if c.TraceEndpoint != "http://collector:4318" || c.TraceRatio != 0.25 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("SecretsKey", func(t *testing.T) {
		key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
		c, err := config.Load("api", env("AGENTPLANE_SECRETS_KEY", key))
		if err != nil || string(c.SecretsKey) != "0123456789abcdef0123456789abcdef" {
			t.Fatalf("key %q, %v", c.SecretsKey, err)
		}
		if c, _ := config.Load("api", env()); c.SecretsKey != nil {
			t.Fatalf("a key without one configured: %q", c.SecretsKey)
		}
	})
	for _, bad := range [][]string{
		{"AGENTPLANE_MAX_BODY_BYTES", "0"},
		{"AGENTPLANE_MAX_BODY_BYTES", "lots"},
		{"AGENTPLANE_RATE_LIMIT", "-1"},
		{"AGENTPLANE_WORKER_CONCURRENCY", "0"},
		{"AGENTPLANE_SHUTDOWN_TIMEOUT", "soon"},
		{"AGENTPLANE_LOG_LEVEL", "loud"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"OTEL_TRACES_SAMPLER_ARG", "2"},
		{"AGENTPLANE_SECRETS_KEY", "c2hvcnQ="},
		{"AGENTPLANE_SECRETS_KEY", "not base64!"},
	} {
		t.Run("Rejects/"+bad[0]+"="+bad[1], func(t *testing.T) {
			if _, err := config.Load("api", env(bad...)); err == nil || !strings.Contains(err.Error(), bad[0]) {
				t.Fatalf("error %v, want one naming %s", err, bad[0])
			}
		})
	}
}
