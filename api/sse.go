package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// sse writes a Server-Sent Events stream. Nothing is written until the first event, so an error
// found before then is still an ordinary JSON error answer. Once started, a comment line every
// heartbeat keeps idle proxies from closing the connection.
type sse struct {
	c         *gin.Context
	heartbeat time.Duration
	mu        sync.Mutex
	started   bool
	next      int
	stop      chan struct{}
	stopped   sync.WaitGroup
}

func newSSE(c *gin.Context, heartbeat time.Duration) *sse {
	return &sse{c: c, heartbeat: heartbeat, stop: make(chan struct{})}
}

// event writes one event with data as JSON, numbered after the last.
func (s *sse) event(name string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return s.write(strconv.Itoa(s.next), name, raw)
}

// entry writes a kept entry of a run under its own number, which a client resumes from. The
// failure that ends a failed run is written as the API's error body.
func (s *sse) entry(e agentruns.Entry) error {
	raw := []byte(e.Data)
	if e.Event == agentruns.EventError {
		f := agentruns.FailureOf(e)
		status := statusOf(apperr.KindNamed(f.Kind))
		var err error
		if raw, err = json.Marshal(gin.H{"error": gin.H{"status": status, "code": f.Code, "message": f.Message}, "message": f.Message}); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = e.Seq
	return s.write(strconv.Itoa(e.Seq), e.Event, raw)
}

// delta writes a piece of an answer, without a number: it is not kept, and a client resuming
// from a later entry does not need it.
func (s *sse) delta(text string) error {
	raw, err := json.Marshal(gin.H{"content": text})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write("", agentruns.EventDelta, raw)
}

// data writes v as an event of no name and no number, as OpenAI's streams are made.
func (s *sse) data(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(string(raw))
}

// raw writes text as an event's data, as it is.
func (s *sse) raw(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write("", "", []byte(text))
}

// write sends one event (of no name when name is empty); s.mu is held.
func (s *sse) write(id, name string, raw []byte) error {
	if !s.started {
		s.begin()
	}
	if id != "" {
		if _, err := fmt.Fprintf(s.c.Writer, "id: %s\n", id); err != nil {
			return err
		}
	}
	if name != "" {
		if _, err := fmt.Fprintf(s.c.Writer, "event: %s\n", name); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.c.Writer, "data: %s\n\n", raw); err != nil {
		return err
	}
	s.c.Writer.Flush()
	return nil
}

// begin sends the headers and starts the heartbeat; s.mu is held.
func (s *sse) begin() {
	s.started = true
	h := s.c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.c.Writer.WriteHeader(http.StatusOK)
	s.stopped.Go(func() {
		t := time.NewTicker(s.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-s.c.Request.Context().Done():
				return
			case <-t.C:
				s.mu.Lock()
				_, _ = fmt.Fprint(s.c.Writer, ": ping\n\n")
				s.c.Writer.Flush()
				s.mu.Unlock()
			}
		}
	})
}

// began reports whether the stream has started (its headers are sent).
func (s *sse) began() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// close stops the heartbeat of a started stream.
func (s *sse) close() {
	if s.began() {
		close(s.stop)
		s.stopped.Wait()
	}
}

// Stored and Delta make the stream the sink of a chat reply.
func (s *sse) Stored(m chats.Message) error { return s.event("stored", gin.H{"message": m}) }

func (s *sse) Delta(text string) error { return s.delta(text) }
