// Package dnstxttest is a real DNS server on loopback for tests: it answers the TXT records a
// test sets and the aliases (CNAME records) it sets, and NXDOMAIN for every other name.
package dnstxttest

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Server is a DNS server on a loopback UDP port.
type Server struct {
	// Addr is the server's host:port.
	Addr string
	mu   sync.Mutex
	txt  map[string][]string
	// cname holds aliases: a name's canonical name.
	cname map[string]string
}

// Start starts a server, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: pc.LocalAddr().String(), txt: map[string][]string{}, cname: map[string]string{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.answer), NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}

// SetTXT makes values the TXT records of name (none: the name does not exist).
func (s *Server) SetTXT(name string, values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txt[dns.Fqdn(strings.ToLower(name))] = values
}

// SetCNAME makes name an alias of target (answered to a query of any type for name), or no
// alias when target is "".
func (s *Server) SetCNAME(name, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if target == "" {
		delete(s.cname, dns.Fqdn(strings.ToLower(name)))
		return
	}
	s.cname[dns.Fqdn(strings.ToLower(name))] = dns.Fqdn(strings.ToLower(target))
}

func (s *Server) answer(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	s.mu.Lock()
	for _, q := range req.Question {
		if target, ok := s.cname[strings.ToLower(q.Name)]; ok {
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 60}, Target: target})
			continue
		}
		values, ok := s.txt[strings.ToLower(q.Name)]
		if !ok || len(values) == 0 {
			m.Rcode = dns.RcodeNameError
			continue
		}
		if q.Qtype != dns.TypeTXT {
			continue
		}
		for _, v := range values {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{v}})
		}
	}
	s.mu.Unlock()
	_ = w.WriteMsg(m)
}
