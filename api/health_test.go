package api_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/devenv/devstack"
)

func TestReadiness(t *testing.T) {
	t.Parallel()
	t.Run("Ready", func(t *testing.T) {
		b := setup(t)
		expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/readyz"}), http.StatusOK, "")
		expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/healthz"}), http.StatusOK, "")
	})
	t.Run("NamesWhatIsDown", func(t *testing.T) {
		b := setup(t, withChecks(
			api.Check{Name: "mongodb", Ping: func(context.Context) error { return nil }},
			api.Check{Name: "nats", Ping: func(context.Context) error { return errors.New("not connected") }},
		))
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/readyz"})
		expect(t, res, http.StatusServiceUnavailable, "not_ready")
		details := res.JSON(t)["error"].(map[string]any)["details"].([]any)
		if len(details) != 1 || details[0].(map[string]any)["field"] != "nats" {
			t.Fatalf("details %v, want nats alone", details)
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, withRateLimit(3))
	for i := range 3 {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key})
		expect(t, res, http.StatusOK, "")
		if res.Header.Get("X-RateLimit-Limit") != "3" || res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("request %d: limit %q remaining %q", i, res.Header.Get("X-RateLimit-Limit"), res.Header.Get("X-RateLimit-Remaining"))
		}
		reset, err := strconv.ParseInt(res.Header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil || reset < time.Now().Unix() || reset > time.Now().Add(2*time.Minute).Unix() {
			t.Fatalf("X-RateLimit-Reset %q", res.Header.Get("X-RateLimit-Reset"))
		}
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key})
	expect(t, res, http.StatusTooManyRequests, "rate_limited")
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	// Another key of another account has its own budget.
	other, _ := b.newTenant(t)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: other}), http.StatusOK, "")
}

// A fresh key's first request has used one request of its budget, whatever the limit.
func TestRateLimitRemainingOfAFreshKey(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{600, 1000, 7} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			t.Parallel()
			b := setup(t, withRateLimit(limit))
			res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key})
			expect(t, res, http.StatusOK, "")
			if got := res.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(limit-1) {
				t.Fatalf("first request of a fresh key: X-RateLimit-Remaining %s of %d", got, limit)
			}
		})
	}
}

// When Redis goes down the API answers 503 and serves again once it is back.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	rs, err := devstack.StartRedisServer(ctx, dir, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := redis.ParseURL(rs.URL)
	opt.MaxRetries = -1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	b := setup(t, withRedis(rdb))
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key}), http.StatusOK, "")

	rs.Close()
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key}), http.StatusServiceUnavailable, "dependency_unavailable")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/readyz"}), http.StatusServiceUnavailable, "not_ready")

	port, _ := strconv.Atoi(opt.Addr[len("127.0.0.1:"):])
	rs, err = devstack.StartRedisServer(ctx, dir, port, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key}), http.StatusOK, "")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/readyz"}), http.StatusOK, "")
}
