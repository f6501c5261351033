package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// Two API processes and a worker, each with its caches of keys, projects and agents: what one
// API changes, the other stops serving as the change's notice reaches it over NATS, long before
// the caches' TTL (5 minutes here, so only the notice can explain it). While NATS is down a process
// still serving a revoked key stops when its entry's TTL ends, and a process whose connection to
// NATS comes back empties its caches, since the notices sent meanwhile were lost.
func TestCachesAcrossProcesses(t *testing.T) {
	t.Parallel()
	stack := newFaultStack(t)
	env := stack.env()
	env["AGENTPLANE_CACHE_TTL"] = "5m"
	getenv := func(k string) string { return env[k] }
	if err := run(context.Background(), []string{"migrate"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	admin := createAccount(t, env)
	_, oneAddr := spawnServing(t, env, "api")
	_, twoAddr := spawnServing(t, env, "api")
	_, workerAddr := spawnServing(t, env, "worker")
	short := maps.Clone(env)
	short["AGENTPLANE_CACHE_TTL"] = "2s"
	_, shortAddr := spawnServing(t, short, "api")
	for _, addr := range []string{oneAddr, twoAddr, workerAddr, shortAddr} {
		waitHealthy(t, addr)
	}
	one, two, shortTTL := apitest.Dial(t, "http://"+oneAddr), apitest.Dial(t, "http://"+twoAddr), apitest.Dial(t, "http://"+shortAddr)

	ok := func(c *apitest.Client, method, path, key string, body any) map[string]any {
		t.Helper()
		res := c.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body})
		if res.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, res.Status, res.Body)
		}
		return res.JSON(t)
	}
	// until waits for c to answer status to a GET of path with key, failing after within.
	until := func(c *apitest.Client, path, key string, status int, within time.Duration, what string) {
		t.Helper()
		for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
			res := c.Do(apitest.Request{Method: "GET", Path: path, Key: key})
			if res.Status == status {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %d after %v: %s", what, res.Status, within, res.Body)
			}
		}
	}
	newKey := func() (id, secret string) {
		k := ok(one, "POST", "/v1/keys", admin, map[string]any{"name": "revocable"})
		return k["key"].(map[string]any)["id"].(string), k["api_key"].(string)
	}
	project := ok(one, "POST", "/v1/projects", admin, map[string]any{"name": "p"})["project"].(map[string]any)["id"].(string)
	bot := ok(one, "POST", "/v1/bot/create", admin, map[string]any{"project_id": project, "name": "Before", "model": "m"})["bot"].(map[string]any)["uuid"].(string)
	read := "/v1/bot/read?project_id=" + project + "&bot_id=" + bot

	// A revoked key, with NATS up.
	keyID, key := newKey()
	for _, c := range []*apitest.Client{one, two} {
		ok(c, "GET", read, key, nil) // the key, the project and the agent are cached
	}
	ok(one, "DELETE", "/v1/keys/"+keyID, admin, nil)
	until(two, read, key, http.StatusUnauthorized, 5*time.Second, "the other API refuses the revoked key")

	// An updated, then deleted agent.
	ok(one, "PUT", "/v1/bot/update", admin, map[string]any{"project_id": project, "bot_id": bot, "name": "After"})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ok(two, "GET", read, admin, nil)["bot"].(map[string]any)["name"] == "After" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other API still serves the agent as it was before its update")
		}
	}
	ok(one, "DELETE", "/v1/bot/delete?project_id="+project+"&bot_id="+bot, admin, nil)
	until(two, read, admin, http.StatusNotFound, 5*time.Second, "the other API finds the deleted agent gone")

	// A source made ready by the worker, then deleted through the first API: the second, which
	// holds the agent's memory (empty, then with the source), searches it as it is once the
	// notices reach it.
	bot = ok(one, "POST", "/v1/bot/create", admin, map[string]any{"project_id": project, "name": "Memory", "model": "m"})["bot"].(map[string]any)["uuid"].(string)
	found := func() int {
		t.Helper()
		return len(ok(two, "POST", "/v1/bot/search", admin, map[string]any{"project_id": project, "bot_id": bot, "keywords": "albatross"})["results"].([]any))
	}
	if n := found(); n != 0 {
		t.Fatalf("an agent without sources found %d passages", n)
	}
	source := ok(one, "POST", "/v1/bot/source/create", admin, map[string]any{"project_id": project, "bot_id": bot, "type": "text",
		"title": "Birds", "source": "The albatross glides for hours without a wingbeat."})["source"].(map[string]any)["id"].(string)
	sourcePath := "/v1/bot/source/read?project_id=" + project + "&bot_id=" + bot + "&source_id=" + source
	for deadline := time.Now().Add(10 * time.Second); ok(one, "GET", sourcePath, admin, nil)["source"].(map[string]any)["status"] != "success"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the source was not ingested")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); found() != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other API does not search the source made ready")
		}
	}
	ok(one, "DELETE", "/v1/bot/source/delete?project_id="+project+"&bot_id="+bot+"&source_id="+source, admin, nil)
	for deadline := time.Now().Add(5 * time.Second); found() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other API still searches the deleted source")
		}
	}

	// NATS down: the notice of a revocation is lost. The short-TTL API stops accepting the key
	// when its entry expires; the long-TTL one once its connection comes back.
	bot = ok(one, "POST", "/v1/bot/create", admin, map[string]any{"project_id": project, "name": "Second", "model": "m"})["bot"].(map[string]any)["uuid"].(string)
	read = "/v1/bot/read?project_id=" + project + "&bot_id=" + bot
	keyID, key = newKey()
	ok(two, "GET", read, key, nil)
	ok(shortTTL, "GET", read, key, nil)
	stack.nats.Close()
	ok(one, "DELETE", "/v1/keys/"+keyID, admin, nil)
	until(shortTTL, read, key, http.StatusUnauthorized, 10*time.Second, "the short-TTL API refuses the revoked key while NATS is down")
	ok(two, "GET", read, key, nil) // NATS still down: the long-TTL API serves its entry
	stack.restartNATS()
	until(two, read, key, http.StatusUnauthorized, 30*time.Second, "the long-TTL API refuses the revoked key once NATS is back")
}
