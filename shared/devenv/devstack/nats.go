package devstack

import (
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is an in-process NATS server with JetStream.
type NATS struct {
	URL    string
	server *server.Server
}

// StartNATS starts a NATS server with JetStream on a loopback port (0: a free one), keeping
// streams under storeDir.
func StartNATS(storeDir string, port int) (*NATS, error) {
	if port == 0 {
		port = server.RANDOM_PORT
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "agentplane-dev",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s")
	}
	return &NATS{URL: ns.ClientURL(), server: ns}, nil
}

// Port is the server's client port.
func (n *NATS) Port() int { return n.server.Addr().(*net.TCPAddr).Port }

// Close stops the server and waits until it has stopped.
func (n *NATS) Close() {
	n.server.Shutdown()
	n.server.WaitForShutdown()
}
