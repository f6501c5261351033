package devstack

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	sqlite3 "modernc.org/sqlite/lib"
)

// The embedded store's SQLite connections wait for a locked file with busyWait, not with the
// sleeping handler of the busy_timeout FerretDB sets in their DSN.
func TestConnectionsWaitWithBusyWait(t *testing.T) {
	startStore(t) // installs it, as the store does
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "busy.sqlite")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var handler uintptr
	if err := conn.Raw(func(c any) error {
		v := reflect.ValueOf(c).Elem()
		// The handle points into SQLite's own memory (modernc.org/libc's), not into Go's heap.
		handler = (*sqlite3.Tsqlite3)(unsafe.Add(nil, v.FieldByName("db").Uint())).FbusyHandler.FxBusyHandler
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if handler != funcPointer(busyWait) {
		t.Fatalf("the connection's busy handler is %#x, not busyWait (%#x)", handler, funcPointer(busyWait))
	}
}
