package store

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/agentplane/agentplane/shared/kit/opcount"
)

// Commands counts the commands a process sends to the store, by command, collection and the
// process's role (agentplane_store_commands_total): on MongoDB each is a network round trip.
type Commands struct{ total *prometheus.CounterVec }

// NewCommands returns the counter of a process of role.
func NewCommands(role string) *Commands {
	return &Commands{total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentplane_store_commands_total",
		Help: "Commands sent to the store (each a round trip on MongoDB), by command, collection and role.", ConstLabels: prometheus.Labels{"role": role}},
		[]string{"command", "collection"})}
}

// Describe and Collect make Commands a Prometheus collector.
func (c *Commands) Describe(ch chan<- *prometheus.Desc) { c.total.Describe(ch) }
func (c *Commands) Collect(ch chan<- prometheus.Metric) { c.total.Collect(ch) }

// housekeeping are the driver's own commands (handshakes, monitoring), which no work makes.
var housekeeping = map[string]bool{"hello": true, "isMaster": true, "ismaster": true, "buildInfo": true, "endSessions": true,
	"saslStart": true, "saslContinue": true, "getnonce": true, "authenticate": true}

// monitor counts each command the work of its context makes (opcount), and into commands when
// not nil.
func monitor(commands *Commands) *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(ctx context.Context, e *event.CommandStartedEvent) {
		if housekeeping[e.CommandName] {
			return
		}
		opcount.Add(ctx)
		if commands != nil {
			collection := ""
			if v, err := e.Command.LookupErr(e.CommandName); err == nil {
				collection, _ = v.StringValueOK()
			}
			commands.total.WithLabelValues(e.CommandName, collection).Inc()
		}
	}}
}
