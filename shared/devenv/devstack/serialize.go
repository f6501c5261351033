package devstack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// serializer is a MongoDB wire-protocol proxy in front of FerretDB that runs the commands which
// read a document and write it back (update, findAndModify) one at a time per document, across
// every connection. FerretDB 1.24 runs them as a query followed by an unconditional write by _id, so
// two at once on one document lose one of the changes ($inc, $push, a compare-and-set on a
// revision), where MongoDB applies each atomically. The store's code relies on MongoDB's
// guarantee; through the proxy the embedded store gives it too. A command that names its one
// document by a string _id waits only for the others of that document (and for the commands
// below); any other (a filter of no _id, many documents) may touch any document of its
// collection, so it runs alone in its collection.
type serializer struct {
	ln      net.Listener
	backend string
	// dir is the store's data directory, where ReindexCommand finds the database's file.
	dir string
	// fields answers the checks of conditional writes it can from the documents' rows.
	fields *fieldChecker

	locks sync.Map // "database.collection" -> *collectionLock

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// serialized are the commands that read and rewrite documents.
var serialized = map[string]bool{"update": true, "findAndModify": true, "findandmodify": true}

// ReindexCommand is a command the proxy answers itself, in the store's process: it gives every
// collection of the database it is sent to the SQLite indexes FerretDB reads (Reindex). The tests, whose
// store runs in another process (cmd/teststore), send it rather than open the store's files
// themselves: SQLite under their race detector was a tenth of an API test's CPU.
const ReindexCommand = "agentplaneReindex"

func startSerializer(addr, backend, dir string) (*serializer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded mongo: listen %s: %w", addr, err)
	}
	s := &serializer{ln: ln, backend: backend, dir: dir, fields: newFieldChecker(dir), conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

func (s *serializer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.serve(c) })
	}
}

// add tracks c among the open connections, or closes it when the proxy is closing (false).
func (s *serializer) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		_ = c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// remove closes c and stops tracking it.
func (s *serializer) remove(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// serve relays the requests of client to a connection of its own to FerretDB, each followed by
// its reply: the driver waits for a reply before it sends the next request on a connection.
func (s *serializer) serve(client net.Conn) {
	if !s.add(client) {
		return
	}
	defer s.remove(client)
	server, err := net.Dial("tcp", s.backend)
	if err != nil || !s.add(server) {
		return
	}
	defer s.remove(server)
	for {
		req, err := readMessage(client)
		if err != nil {
			return
		}
		if err := s.roundTrip(server, client, req); err != nil {
			return
		}
	}
}

func (s *serializer) roundTrip(server, client net.Conn, req []byte) error {
	cmd, coll := command(req)
	if cmd == ReindexCommand {
		db, _, _ := strings.Cut(coll, ".")
		return s.answerReindex(client, req, db)
	}
	var reply []byte
	var err error
	if statements, ordered, ok := splitUpdate(cmd, req); ok {
		reply, err = s.updateEach(server, coll, req, statements, ordered)
	} else {
		reply, err = s.exchange(server, cmd, coll, req)
	}
	if forgets[cmd] {
		db, rest, _ := strings.Cut(coll, ".")
		if cmd == "renameCollection" { // sent to admin, naming "database.collection"
			db, _, _ = strings.Cut(rest, ".")
		}
		s.fields.forget(db)
	}
	if err != nil || reply == nil {
		return err // nil: the client asked for no reply
	}
	_, err = client.Write(reply)
	return err
}

// exchange sends req, the command cmd of the collection coll, to server in its turn, narrowed
// where FerretDB would read the whole collection, and returns the reply (nil when the sender
// expects none).
func (s *serializer) exchange(server net.Conn, cmd, coll string, req []byte) ([]byte, error) {
	if serialized[cmd] {
		defer s.lock(coll, req)()
		if w, ok := byID(req); ok {
			matched, err := s.fields.check(w)
			if errors.Is(err, errAskFerretDB) {
				matched, err = w.check(server)
			}
			if err != nil {
				return nil, err
			}
			if !matched {
				return w.unmatched(req), nil
			}
			req = w.narrowed
		}
	} else if cmd == "find" {
		if narrowed, ok := byIDFind(req); ok {
			req = narrowed
		} else if ids, one, ok := byIDs(req); ok {
			reply, ok, err := expand(server, req, ids, one, maxReply)
			if err != nil || ok {
				return reply, err
			}
		}
	}
	if _, err := server.Write(req); err != nil {
		return nil, err
	}
	if moreToCome(req) {
		return nil, nil
	}
	return readMessage(server)
}

// answerReindex answers ReindexCommand req for database db.
func (s *serializer) answerReindex(client net.Conn, req []byte, db string) error {
	reply := bson.D{{Key: "ok", Value: 1.0}}
	if err := Reindex(context.Background(), s.dir, db); err != nil {
		reply = bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: err.Error()}, {Key: "code", Value: int32(8)}}
	}
	body, err := bson.Marshal(reply)
	if err != nil {
		return err
	}
	_, err = client.Write(buildMessage(0, binary.LittleEndian.Uint32(req[4:]), []section{{kind: 0, docs: []bson.Raw{body}}}))
	return err
}

// lock waits for the turn of the update or findAndModify req of the collection coll, and returns
// what ends it.
func (s *serializer) lock(coll string, req []byte) (unlock func()) {
	l, _ := s.locks.LoadOrStore(coll, &collectionLock{docs: map[string]*documentLock{}})
	if id, ok := oneDocument(req); ok {
		return l.(*collectionLock).document(id)
	}
	return l.(*collectionLock).all()
}

// collectionLock orders the updates of one collection: one of a single document by its _id holds
// the read side of rw and the lock of its document, so that those of different documents run
// together; any other holds the write side, alone.
type collectionLock struct {
	rw   sync.RWMutex
	mu   sync.Mutex // guards docs
	docs map[string]*documentLock
}

// documentLock is the lock of one document, kept while a command holds it or waits for it.
type documentLock struct {
	sync.Mutex
	users int
}

// document takes the turn of an update of the document of _id id, and returns what ends it.
func (c *collectionLock) document(id string) func() {
	c.rw.RLock()
	c.mu.Lock()
	d := c.docs[id]
	if d == nil {
		d = &documentLock{}
		c.docs[id] = d
	}
	d.users++
	c.mu.Unlock()
	d.Lock()
	return func() {
		d.Unlock()
		c.mu.Lock()
		if d.users--; d.users == 0 {
			delete(c.docs, id)
		}
		c.mu.Unlock()
		c.rw.RUnlock()
	}
}

// all takes the turn of an update that may touch any document of the collection.
func (c *collectionLock) all() func() {
	c.rw.Lock()
	return c.rw.Unlock
}

// close stops accepting, closes every connection and waits for the relays to end.
func (s *serializer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	s.wg.Wait()
	s.fields.close()
}

// maxMessage is MongoDB's largest wire message (48 MB).
const maxMessage = 48 << 20

// opMsg is the opcode of OP_MSG, the only message modern drivers send (uncompressed: the
// service configures no wire compression).
const opMsg = 2013

// readMessage reads one wire message: its 16-byte header (length first) and body.
func readMessage(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(size[:])
	if n < 16 || n > maxMessage {
		return nil, errors.New("embedded mongo: bad message length")
	}
	msg := make([]byte, n)
	copy(msg, size[:])
	_, err := io.ReadFull(r, msg[4:])
	return msg, err
}

// command is the name of an OP_MSG's command (the first key of its body section) and the
// "database.collection" it names, or "" when msg is not an OP_MSG.
func command(msg []byte) (name, collection string) {
	if len(msg) < 25 || binary.LittleEndian.Uint32(msg[12:16]) != opMsg || msg[20] != 0 {
		return "", ""
	}
	n := int(binary.LittleEndian.Uint32(msg[21:25]))
	if n < 5 || 21+n > len(msg) {
		return "", ""
	}
	body := bson.Raw(msg[21 : 21+n])
	el, err := body.IndexErr(0)
	if err != nil {
		return "", ""
	}
	coll, _ := el.Value().StringValueOK()
	db, _ := body.Lookup("$db").StringValueOK()
	return el.Key(), db + "." + coll
}

// moreToCome reports whether an OP_MSG's sender expects no reply.
func moreToCome(msg []byte) bool {
	return len(msg) >= 20 && binary.LittleEndian.Uint32(msg[12:16]) == opMsg && binary.LittleEndian.Uint32(msg[16:20])&2 != 0
}
