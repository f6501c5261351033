package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/shared/tools"
)

// BenchmarkMCPToolCall measures what the platform adds to one call of an agent's MCP tool: the
// read-only lookup_order of the test's MCP server (the official Go SDK's, on loopback, behind
// its bearer check), called
//
//   - Direct/session: with the SDK's client over one session kept open (the least a call costs);
//   - Direct/connect: with the SDK's client, connecting for the call and closing after (what a
//     client that keeps no session pays);
//   - Platform: as an agent run calls it, tools.Service.Invoke: the tool read from the store, its
//     credentials opened, a session through the guarded client for the call, the call recorded.
//
// Reports p50/p99 per call and, for the others, the ratio of their p50 to Direct/session's
// (x-session). Use -benchtime 500x or more.
func BenchmarkMCPToolCall(b *testing.B) {
	peer := startMCP(b)
	bb := setup(b, withRateLimit(0))
	botID := createBench(b, bb)
	body := shopTool("Shop", peer.streamable, "")
	body["project_id"], body["bot_id"] = bb.project.ID, botID
	raw, _ := json.Marshal(body)
	res, err := benchDo(bb, http.MethodPost, "/v1/bot/tool", raw)
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("tool: %v %v", res, err)
	}
	_ = res.Body.Close()
	d, err := bb.app.Domain()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	bot, err := bb.agents.Get(ctx, bb.project.ID, botID)
	if err != nil {
		b.Fatal(err)
	}
	offers, err := d.Tools.Offers(ctx, bb.project.ID, bot.ID, bot.ToolSet())
	if err != nil {
		b.Fatal(err)
	}
	var lookup tools.Offer
	for _, o := range offers {
		if o.Operation == "lookup_order" {
			lookup = o
		}
	}
	args := json.RawMessage(`{"customer":"Ada"}`)
	connect := func() (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: peer.streamable, MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearer(mcpSecret)}}, nil)
	}
	call := func(cs *mcp.ClientSession) error {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup_order", Arguments: args})
		if err == nil && r.IsError {
			b.Fatalf("the tool failed: %+v", r)
		}
		return err
	}
	measure := func(b *testing.B, op func() error) time.Duration {
		times := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := op(); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		report(b, times)
		return times[len(times)/2]
	}
	var base time.Duration
	b.Run("Direct/session", func(b *testing.B) {
		cs, err := connect()
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		base = measure(b, func() error { return call(cs) })
	})
	b.Run("Direct/connect", func(b *testing.B) {
		p50 := measure(b, func() error {
			cs, err := connect()
			if err != nil {
				return err
			}
			defer cs.Close()
			return call(cs)
		})
		b.ReportMetric(float64(p50)/float64(base), "x-session")
	})
	b.Run("Platform", func(b *testing.B) {
		p50 := measure(b, func() error {
			_, err := d.Tools.Invoke(ctx, bb.project.ID, bot.ID, lookup, "bench", args)
			return err
		})
		b.ReportMetric(float64(p50)/float64(base), "x-session")
	})
}
