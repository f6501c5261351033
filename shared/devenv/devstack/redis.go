package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// ErrNoRedisServer means redis-server is not on PATH.
var ErrNoRedisServer = errors.New("redis-server is not on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)")

// Redis is a Redis server for dev and tests: a redis-server child process, or an in-memory
// embedded server when redis-server is not installed.
type Redis struct {
	URL string
	// Persistent is false for the in-memory fallback: its data is lost on exit.
	Persistent bool
	cmd        *exec.Cmd
	exited     chan struct{}
	mini       *miniredis.Miniredis
}

// StartRedisServer runs redis-server on a loopback port (0: a free one). With persist, it keeps
// an append-only file under dir; otherwise it keeps nothing on disk.
func StartRedisServer(ctx context.Context, dir string, port int, persist bool) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedisServer
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("redis dir: %w", err)
	}
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", abs,
		"--save", "", "--maxmemory-policy", "noeviction", "--protected-mode", "yes"}
	if persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = abs
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	r := &Redis{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), Persistent: persist, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	if err := r.waitReady(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// StartMiniRedis starts an in-memory embedded Redis.
func StartMiniRedis() (*Redis, error) {
	m, err := miniredis.Run()
	if err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	return &Redis{URL: "redis://" + m.Addr() + "/0", mini: m}, nil
}

func (r *Redis) waitReady(ctx context.Context) error {
	opts, _ := redis.ParseURL(r.URL)
	c := redis.NewClient(opts)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pingCtx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("redis-server exited at start: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server not ready after 10s: %w", err)
		}
	}
}

// Close stops the server; a redis-server child gets SIGTERM, so it flushes its append-only file.
func (r *Redis) Close() {
	if r.mini != nil {
		r.mini.Close()
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
