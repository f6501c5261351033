package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// healthz answers while the process is alive.
func (s *server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz answers 200 when every dependency answers, else 503 naming the ones that do not.
func (s *server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c, 3*time.Second)
	defer cancel()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		down    apperr.Problems
		checked = map[string]string{}
	)
	for _, ch := range s.checks {
		wg.Go(func() {
			err := ch.Ping(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				down.Add(ch.Name, "unreachable: %v", err)
				checked[ch.Name] = "down"
				return
			}
			checked[ch.Name] = "ok"
		})
	}
	wg.Wait()
	if len(down) > 0 {
		names := make([]string, len(down))
		for i, d := range down {
			names[i] = d.Field
		}
		httpx.Fail(c, &apperr.Error{Kind: apperr.Unavailable, Code: "not_ready", Details: down,
			Message: "Not ready: " + strings.Join(names, ", ") + " unreachable."})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": checked})
}

// serveMetrics answers with the process's Prometheus metrics.
func (s *server) serveMetrics(c *gin.Context) { s.metrics.Handler().ServeHTTP(c.Writer, c.Request) }
