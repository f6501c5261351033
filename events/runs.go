package events

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/segmentio/encoding/json"

	"github.com/agentplane/agentplane/shared/agentruns"
)

// RunSubjectPrefix begins the core NATS subject of each execution's progress.
const RunSubjectPrefix = "runs."

// notices is how many progress notices a follower buffers; when it falls behind, deltas are
// dropped and kept entries are read from the store.
const notices = 256

// RunRelay carries the progress of agent runs on core NATS: at most once, which is enough
// since followers re-read the execution.
type RunRelay struct{ nc *nats.Conn }

var _ agentruns.Relay = RunRelay{}

// NewRunRelay returns the relay over nc.
func NewRunRelay(nc *nats.Conn) RunRelay { return RunRelay{nc: nc} }

// Notify publishes p; a failure is ignored (followers poll).
func (r RunRelay) Notify(_ context.Context, executionID string, p agentruns.Progress) {
	raw, _ := json.Marshal(p)
	_ = r.nc.Publish(RunSubjectPrefix+executionID, raw)
}

// Watch subscribes to the execution's notices.
func (r RunRelay) Watch(executionID string) (<-chan agentruns.Progress, func(), error) {
	out := make(chan agentruns.Progress, notices)
	sub, err := r.nc.Subscribe(RunSubjectPrefix+executionID, func(m *nats.Msg) {
		var p agentruns.Progress
		if json.Unmarshal(m.Data, &p) != nil {
			return
		}
		select {
		case out <- p:
		default:
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return out, func() { _ = sub.Unsubscribe() }, nil
}
