package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// abuseOps are what an abusive tenant sends beside the normal load (`load --abusive N`), and
// the statuses each must be answered with: oversized fields are refused before the write,
// dotted keys are ordinary input, a body that never arrives is answered without waiting for
// it, and concurrent updates of one deal all land. Any other answer counts as an error.
var abuseOps = []struct {
	name string
	want []int
}{
	{"abuse_oversized", []int{http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity}},
	{"abuse_dotted_keys", []int{http.StatusOK}},
	{"abuse_slow_body", []int{http.StatusUnauthorized}},
	{"abuse_concurrent_updates", []int{http.StatusOK}},
}

// abuser sends the abusive operations in turn, at most l.cfg.pace of them a second, until ctx
// ends.
func (l *loader) abuser(ctx context.Context) {
	var every time.Duration
	if l.cfg.pace > 0 {
		every = time.Duration(float64(time.Second) / l.cfg.pace)
	}
	for i := 0; ctx.Err() == nil; i++ {
		op := abuseOps[i%len(abuseOps)]
		start := time.Now()
		next := time.NewTimer(every)
		statuses, err := l.abuse(ctx, op.name)
		if ctx.Err() != nil && err != nil {
			return
		}
		failure := ""
		for _, st := range statuses {
			if !slices.Contains(op.want, st) {
				failure = strconv.Itoa(st)
			}
		}
		if err != nil && failure == "" {
			failure = "transport"
		}
		l.stats[op.name].add(time.Since(start), failure)
		select {
		case <-ctx.Done():
		case <-next.C:
		}
	}
}

// abuse runs one abusive operation and returns the statuses it was answered with.
func (l *loader) abuse(ctx context.Context, op string) ([]int, error) {
	switch op {
	case "abuse_oversized":
		blob := strings.Repeat("x", 200<<10)
		st, err := l.status(ctx, l.abusive, "PUT", "/v1/bot/update", l.abusive.scope(map[string]any{"integrations": []any{map[string]any{"blob": blob}}}))
		return []int{st}, err
	case "abuse_dotted_keys":
		st, err := l.status(ctx, l.abusive, "PUT", "/v1/bot/update", l.abusive.scope(map[string]any{"integrations": []any{
			map[string]any{"a.b": 1, "x$y": map[string]any{"": "empty", "ключ.ü": true}}}}))
		return []int{st}, err
	case "abuse_slow_body":
		st, err := l.slowBody(ctx)
		return []int{st}, err
	case "abuse_concurrent_updates":
		id := l.abusive.deals[0]
		statuses := make([]int, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Go(func() {
				value := 1000 + l.values.Add(1)
				statuses[i], errs[i] = l.status(ctx, l.abusive, "PUT", "/v1/bot/crm/deals/"+id, l.abusive.scope(map[string]any{"value": value}))
				if statuses[i] == http.StatusOK {
					l.updates.Store(value, id)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return statuses, err
			}
		}
		return statuses, nil
	}
	return nil, fmt.Errorf("load: unknown abusive operation %q", op)
}

// status sends one request as t and returns its status (0 when there was no answer).
func (l *loader) status(ctx context.Context, t *tenant, method, path string, body any) (int, error) {
	failure, err := l.callAs(ctx, t, method, path, body, nil)
	switch {
	case failure == "":
		return http.StatusOK, nil
	case failure == "transport" || failure == "decode":
		return 0, err
	}
	st, _ := strconv.Atoi(failure)
	return st, nil
}

// slowBody opens a connection of its own, announces a body of 100 bytes, sends 4 and no key,
// and returns the status of the answer, which must come without the rest of the body.
func (l *loader) slowBody(ctx context.Context) (int, error) {
	u, err := url.Parse(l.cfg.base)
	if err != nil {
		return 0, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(15 * time.Second)); err != nil {
		return 0, err
	}
	req := "POST /v1/projects HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na"
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	_ = res.Body.Close()
	return res.StatusCode, nil
}
