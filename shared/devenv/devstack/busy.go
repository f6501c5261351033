package devstack

import (
	"errors"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite lets one connection at a time write to a database file; FerretDB keeps a pool of them
// per database, so under concurrency its writers find the file locked (SQLITE_BUSY) and wait for
// it. The busy_timeout FerretDB sets waits by sleeping 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50,
// then 100 ms between attempts, while a write holds the lock for about a millisecond: with 16
// clients the file stood unwritten while its writers slept, the store used less than one of the
// machine's cores and 16 connections carried fewer chats than one (issue 40). busyWait is the
// handler the embedded store's connections use instead: it tries again after busyPause, doubling
// up to busyPauseMax, for busyTimeout in all, as FerretDB's busy_timeout does.
const (
	busyPause    = 50 * time.Microsecond
	busyPauseMax = time.Millisecond
	busyTimeout  = 10 * time.Second
)

// busyPauses is how many pauses make busyTimeout.
var busyPauses = func() int32 {
	var n int32
	for d, total := busyPause, time.Duration(0); total < busyTimeout; d = min(2*d, busyPauseMax) {
		total += d
		n++
	}
	return n
}()

// busyWait is an SQLite busy handler: count is how many times it was called for this lock.
// It returns 0 to give up (the statement fails with SQLITE_BUSY), 1 to try again.
func busyWait(_ *libc.TLS, _ uintptr, count int32) int32 {
	if count >= busyPauses {
		return 0
	}
	time.Sleep(min(busyPause<<min(count, 5), busyPauseMax))
	return 1
}

var installBusyWait = sync.OnceFunc(func() { sqlite.RegisterConnectionHook(setBusyWait) })

// setBusyWait makes busyWait the busy handler of c, a connection of modernc.org/sqlite, the
// driver FerretDB opens. The driver gives no call for it, so it reads the connection's SQLite
// handle from its fields; a driver whose connection lacks them fails every connection, loudly,
// rather than run with the sleeping handler unnoticed.
func setBusyWait(c sqlite.ExecQuerierContext, _ string) error {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return errBusyWait
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if db.Kind() != reflect.Uintptr || !tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() {
		return errBusyWait
	}
	if rc := sqlite3.Xsqlite3_busy_handler((*libc.TLS)(tls.UnsafePointer()), uintptr(db.Uint()), funcPointer(busyWait), 0); rc != sqlite3.SQLITE_OK {
		return errBusyWait
	}
	return nil
}

var errBusyWait = errors.New("embedded mongo: the SQLite driver's connections changed: its busy handler cannot be set")

// funcPointer is f as the C function pointer the transpiled SQLite calls (the representation of
// https://golang.org/s/go11func, as modernc.org/sqlite's own callbacks are passed).
func funcPointer[T any](f T) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f}))
}
