package httpx

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

// SSE writes a Server-Sent Events stream. Nothing is written until the first event or Start, so
// an error found before then is still an ordinary JSON error answer. Once started, a comment
// line every heartbeat keeps idle proxies from closing the connection.
type SSE struct {
	c         *gin.Context
	heartbeat time.Duration
	mu        sync.Mutex
	started   bool
	next      int
	stop      chan struct{}
	stopped   sync.WaitGroup
}

// NewSSE is c's event stream, a comment line every heartbeat once started.
func NewSSE(c *gin.Context, heartbeat time.Duration) *SSE {
	return &SSE{c: c, heartbeat: heartbeat, stop: make(chan struct{})}
}

// Event writes one event with data as JSON, numbered after the last.
func (s *SSE) Event(name string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return s.write(strconv.Itoa(s.next), name, raw)
}

// Entry writes a kept entry of a run under its own number, which a client resumes from. The
// failure that ends a failed run is written as the API's error body.
func (s *SSE) Entry(e agentruns.Entry) error {
	raw := []byte(e.Data)
	if e.Event == agentruns.EventError {
		f := agentruns.FailureOf(e)
		status := StatusOf(apperr.KindNamed(f.Kind))
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

// Delta writes a piece of an answer, without a number: it is not kept, and a client resuming
// from a later entry does not need it.
func (s *SSE) Delta(text string) error {
	raw, err := json.Marshal(gin.H{"content": text})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write("", agentruns.EventDelta, raw)
}

// Typed writes v as an event named typ, without a number, as OpenAI's Responses streams are made.
func (s *SSE) Typed(typ string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write("", typ, raw)
}

// Data writes v as an event of no name and no number, as OpenAI's streams are made.
func (s *SSE) Data(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.Raw(string(raw))
}

// Raw writes text as an event's data, as it is.
func (s *SSE) Raw(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write("", "", []byte(text))
}

// write sends one event (of no name when name is empty); s.mu is held.
func (s *SSE) write(id, name string, raw []byte) error {
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
func (s *SSE) begin() {
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

// Start sends the headers and starts the heartbeat now, when nothing can fail with an ordinary
// answer any more: a stream whose first event may be long in coming (a run followed while it
// waits for its model) is then kept alive by the heartbeat from its start.
func (s *SSE) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.begin()
		s.c.Writer.Flush()
	}
}

// Began reports whether the stream has started (its headers are sent).
func (s *SSE) Began() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// Close stops the heartbeat of a started stream.
func (s *SSE) Close() {
	if s.Began() {
		close(s.stop)
		s.stopped.Wait()
	}
}

// Stored (with Delta) makes the stream the sink of a chat reply.
func (s *SSE) Stored(m chats.Message) error { return s.Event("stored", gin.H{"message": m}) }
