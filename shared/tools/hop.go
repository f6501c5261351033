package tools

import "context"

// HopHeader counts the agent-to-agent (A2A) calls a request is at the end of: 1 (or absent) for
// a call made by a client, n+1 for a call an agent makes while answering a call at hop n.
const HopHeader = "X-A2A-Hop"

// MaxHops is the longest chain of agent-to-agent calls: an agent answers no call beyond it, and
// a run answering a call at MaxHops calls no remote agent, so that agents calling each other in
// a loop stop.
const MaxHops = 4

type hopKey struct{}

// WithHop is ctx carrying the hop of the A2A call a run answers (0 for a run no agent asked for).
func WithHop(ctx context.Context, hop int) context.Context {
	return context.WithValue(ctx, hopKey{}, hop)
}

// HopOf is the hop of the A2A call the run of ctx answers: 0 when no agent asked for it.
func HopOf(ctx context.Context) int {
	hop, _ := ctx.Value(hopKey{}).(int)
	return hop
}
