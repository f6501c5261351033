package devstack

import (
	"encoding/binary"
	"errors"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FerretDB 1.24 runs the statements of one update command with the query of each held open, an
// SQLite connection each, until the command ends. An update of more than about 100 statements
// (the outbox's removal of the events published during a burst: one statement a document) took
// every connection of the database's pool (100) and then waited for other commands to free one,
// so every other command of the store queued behind it: at 16 clients, 97 connections were held
// by one update and 20 commands waited for one, and the store used less than a core. The proxy
// sends an update of many statements as one command a statement, in order, each in its own turn
// (its document's, narrowed to its _id where it can be), and answers with their replies merged
// into the one MongoDB gives for the whole command. As on MongoDB, each statement is atomic and
// the command as a whole is not.

// splitUpdate returns one update request a statement of req when cmd is an update of more than
// one statement that expects a reply, and whether its statements are ordered (an error stops
// the ones after it).
func splitUpdate(cmd string, req []byte) (statements [][]byte, ordered, ok bool) {
	if cmd != "update" || moreToCome(req) {
		return nil, false, false
	}
	sections, ok := parseSections(req)
	if !ok {
		return nil, false, false
	}
	all, where := updateStatements(sections)
	if len(all) < 2 {
		return nil, false, false
	}
	body := sections[0].docs[0]
	ordered = true
	if v, ok := body.Lookup("ordered").BooleanOK(); ok {
		ordered = v
	}
	id, to := binary.LittleEndian.Uint32(req[4:]), binary.LittleEndian.Uint32(req[8:])
	for _, st := range all {
		one := append([]section(nil), sections...)
		if where == 0 {
			arr, err := bson.Marshal(bson.D{{Key: "updates", Value: bson.A{st}}})
			if err != nil {
				return nil, false, false
			}
			b, err := replaceField(body, "updates", bson.Raw(arr).Lookup("updates"))
			if err != nil {
				return nil, false, false
			}
			one[0] = section{kind: 0, docs: []bson.Raw{b}}
		} else {
			one[where] = section{kind: 1, id: "updates", docs: []bson.Raw{st}}
		}
		statements = append(statements, buildMessage(id, to, one))
	}
	return statements, ordered, true
}

// updateEach runs statements, the update req of the collection coll split by splitUpdate, one
// after the other, and returns the reply to req: the sum of the statements' n and nModified,
// their upserts and write errors with the index of their statement in req. A statement answered
// with a failed command ends it with that reply.
func (s *serializer) updateEach(server net.Conn, coll string, req []byte, statements [][]byte, ordered bool) ([]byte, error) {
	var n, modified int32
	var upserted, writeErrors bson.A
	for i, st := range statements {
		res, err := s.exchange(server, "update", coll, st)
		if err != nil {
			return nil, err
		}
		sections, ok := parseSections(res)
		if !ok {
			return nil, errors.New("embedded mongo: unreadable reply to an update")
		}
		reply := sections[0].docs[0]
		if okv, _ := reply.Lookup("ok").AsFloat64OK(); okv != 1 {
			return buildMessage(0, binary.LittleEndian.Uint32(req[4:]), sections), nil
		}
		n += int32(asInt(reply.Lookup("n")))
		modified += int32(asInt(reply.Lookup("nModified")))
		renumbered := func(field string) (bson.A, error) {
			arr, ok := reply.Lookup(field).ArrayOK()
			if !ok {
				return nil, nil
			}
			vals, err := arr.Values()
			if err != nil {
				return nil, err
			}
			out := make(bson.A, 0, len(vals))
			for _, v := range vals {
				d, ok := v.DocumentOK()
				if !ok {
					return nil, errors.New("embedded mongo: unreadable " + field + " in a reply to an update")
				}
				e, err := replaceField(d, "index", int32(i))
				if err != nil {
					return nil, err
				}
				out = append(out, e)
			}
			return out, nil
		}
		ups, err := renumbered("upserted")
		if err != nil {
			return nil, err
		}
		errs, err := renumbered("writeErrors")
		if err != nil {
			return nil, err
		}
		upserted, writeErrors = append(upserted, ups...), append(writeErrors, errs...)
		if len(errs) > 0 && ordered {
			break
		}
	}
	merged := bson.D{{Key: "n", Value: n}, {Key: "nModified", Value: modified}}
	if len(upserted) > 0 {
		merged = append(merged, bson.E{Key: "upserted", Value: upserted})
	}
	if len(writeErrors) > 0 {
		merged = append(merged, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	body, err := bson.Marshal(append(merged, bson.E{Key: "ok", Value: 1.0}))
	if err != nil {
		return nil, err
	}
	return buildMessage(0, binary.LittleEndian.Uint32(req[4:]), []section{{kind: 0, docs: []bson.Raw{body}}}), nil
}

// asInt is a reply's count, whichever integer or double type it comes as (0 when absent).
func asInt(v bson.RawValue) int64 {
	if i, ok := v.AsInt64OK(); ok {
		return i
	}
	return 0
}
