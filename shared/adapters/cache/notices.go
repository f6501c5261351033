package cache

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// subject starts the subject of every notice: "agentplane.cache.<kind>", the changed id its data.
// Notices are core NATS messages, not stream events: they matter only to the processes running
// when they are sent, and one a process misses is covered by the purge on reconnection and by
// the TTL.
const subject = "agentplane.cache."

// Notices tells every process's caches that something they may hold changed: the process that
// makes a change drops it from its own caches at once, and the others when the notice reaches
// them.
type Notices struct {
	nc  *nats.Conn
	log *slog.Logger

	mu     sync.RWMutex
	drops  map[string][]func(id string)
	purges []func()
}

// NewNotices returns the notices of a process connected by nc.
func NewNotices(nc *nats.Conn, log *slog.Logger) *Notices {
	return &Notices{nc: nc, log: log, drops: map[string][]func(string){}}
}

// onChange registers what a change of the kind's id drops.
func (n *Notices) onChange(kind string, drop func(id string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drops[kind] = append(n.drops[kind], drop)
}

// onReconnect registers what empties caches when notices may have been missed.
func (n *Notices) onReconnect(purge ...func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.purges = append(n.purges, purge...)
}

func (n *Notices) drop(kind, id string) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, d := range n.drops[kind] {
		d(id)
	}
}

func (n *Notices) purge() {
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, p := range n.purges {
		p()
	}
}

// Changed drops what the caches hold of the kind's id here, and tells the other processes to.
func (n *Notices) Changed(kind, id string) {
	n.drop(kind, id)
	if err := n.nc.Publish(subject+kind, []byte(id)); err != nil {
		n.log.Warn("cache notice not sent; other processes see the change within the cache TTL", "kind", kind, "error", err)
	}
}

// Watch applies the other processes' notices until the subscription it returns is drained, and
// empties the caches whenever the connection to NATS comes back: notices sent meanwhile were
// missed. It is called once, as the process starts.
func (n *Notices) Watch() (*nats.Subscription, error) {
	reconnected := n.nc.Opts.ReconnectedCB
	n.nc.SetReconnectHandler(func(c *nats.Conn) {
		n.purge()
		if reconnected != nil {
			reconnected(c)
		}
	})
	return n.nc.Subscribe(subject+">", func(m *nats.Msg) {
		n.drop(strings.TrimPrefix(m.Subject, subject), string(m.Data))
	})
}
