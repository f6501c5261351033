package devstack

import (
	"encoding/binary"
	"errors"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FerretDB 1.24 pushes a filter down to SQLite only when it is exactly {_id: <string>}: a write
// of one document conditional on more (a revision, an owner, "not deleted") makes it decode every
// document of the collection to find the one, so its cost grows with the collection. The proxy,
// which already runs such writes one at a time per collection, splits them in two: it asks
// whether the document of that _id matches the whole filter (an aggregation whose first stage,
// {$match: {_id}}, is pushed down, and whose second applies the filter to that one document),
// then sends the write narrowed to {_id} when it does, and answers "none matched" itself when it
// does not. Upserts and writes of many documents pass through as they are. A find of that kind
// (a deal of the project and agent, not deleted) goes as that aggregation, whose reply has the
// find's own shape (a cursor and its first batch); one with options the aggregation would not
// keep as they are passes through.

// byIDWrite is a write narrowed to its _id: the check to run first and the narrowed request.
type byIDWrite struct {
	command  string // update or findAndModify
	db, coll string
	id       string
	filter   bson.Raw
	narrowed []byte
}

// section is one section of an OP_MSG: its body (kind 0), or a document sequence (kind 1).
type section struct {
	kind byte
	id   string
	docs []bson.Raw
}

// parseSections splits an OP_MSG's sections; false when msg is not an OP_MSG this proxy reads
// (a checksum, a malformed section).
func parseSections(msg []byte) ([]section, bool) {
	if len(msg) < 21 || binary.LittleEndian.Uint32(msg[12:16]) != opMsg || binary.LittleEndian.Uint32(msg[16:20])&1 != 0 {
		return nil, false
	}
	var out []section
	for rest := msg[20:]; len(rest) > 0; {
		kind := rest[0]
		rest = rest[1:]
		if len(rest) < 4 {
			return nil, false
		}
		n := int(binary.LittleEndian.Uint32(rest))
		if n < 5 || n > len(rest) {
			return nil, false
		}
		switch kind {
		case 0:
			out = append(out, section{kind: 0, docs: []bson.Raw{bson.Raw(rest[:n])}})
		case 1:
			seq := rest[4:n]
			end := 0
			for end < len(seq) && seq[end] != 0 {
				end++
			}
			if end == len(seq) {
				return nil, false
			}
			sec := section{kind: 1, id: string(seq[:end])}
			for docs := seq[end+1:]; len(docs) > 0; {
				if len(docs) < 5 {
					return nil, false
				}
				dn := int(binary.LittleEndian.Uint32(docs))
				if dn < 5 || dn > len(docs) {
					return nil, false
				}
				sec.docs = append(sec.docs, bson.Raw(docs[:dn]))
				docs = docs[dn:]
			}
			out = append(out, sec)
		default:
			return nil, false
		}
		rest = rest[n:]
	}
	return out, len(out) > 0 && out[0].kind == 0
}

// buildMessage is an OP_MSG of sections, answering (or, for a request, numbered like) the
// message whose header is header.
func buildMessage(requestID, responseTo uint32, sections []section) []byte {
	msg := make([]byte, 20, 64)
	binary.LittleEndian.PutUint32(msg[4:], requestID)
	binary.LittleEndian.PutUint32(msg[8:], responseTo)
	binary.LittleEndian.PutUint32(msg[12:], opMsg)
	for _, sec := range sections {
		msg = append(msg, sec.kind)
		if sec.kind == 0 {
			msg = append(msg, sec.docs[0]...)
			continue
		}
		start := len(msg)
		msg = append(msg, 0, 0, 0, 0)
		msg = append(msg, sec.id...)
		msg = append(msg, 0)
		for _, d := range sec.docs {
			msg = append(msg, d...)
		}
		binary.LittleEndian.PutUint32(msg[start:], uint32(len(msg)-start))
	}
	binary.LittleEndian.PutUint32(msg[0:], uint32(len(msg)))
	return msg
}

// byID returns the narrowed form of req when it is one update or findAndModify of the document of
// a string _id under a filter of more than that; false otherwise (req then goes as it is).
func byID(req []byte) (byIDWrite, bool) {
	sections, ok := parseSections(req)
	if !ok {
		return byIDWrite{}, false
	}
	body := sections[0].docs[0]
	first, err := body.IndexErr(0)
	if err != nil {
		return byIDWrite{}, false
	}
	w := byIDWrite{command: first.Key()}
	w.coll, _ = first.Value().StringValueOK()
	w.db, _ = body.Lookup("$db").StringValueOK()
	var statement bson.Raw
	var key string
	switch w.command {
	case "findAndModify", "findandmodify":
		statement, key = body, "query"
	case "update":
		statements, where := updateStatements(sections)
		if len(statements) != 1 || where < 0 {
			return byIDWrite{}, false
		}
		statement, key = statements[0], "q"
		if multi, _ := statement.Lookup("multi").BooleanOK(); multi {
			return byIDWrite{}, false
		}
	default:
		return byIDWrite{}, false
	}
	if upsert, _ := statement.Lookup("upsert").BooleanOK(); upsert {
		return byIDWrite{}, false
	}
	filter, ok := statement.Lookup(key).DocumentOK()
	if !ok {
		return byIDWrite{}, false
	}
	elems, err := filter.Elements()
	if err != nil || len(elems) < 2 {
		return byIDWrite{}, false
	}
	if w.id, ok = filter.Lookup("_id").StringValueOK(); !ok {
		return byIDWrite{}, false
	}
	w.filter = filter
	narrowedStatement, err := replaceField(statement, key, bson.D{{Key: "_id", Value: w.id}})
	if err != nil {
		return byIDWrite{}, false
	}
	if w.command == "update" {
		_, where := updateStatements(sections)
		if sections[where].kind == 0 {
			arr, err := bson.Marshal(bson.D{{Key: "updates", Value: bson.A{narrowedStatement}}})
			if err != nil {
				return byIDWrite{}, false
			}
			if sections[0].docs[0], err = replaceField(body, "updates", bson.Raw(arr).Lookup("updates")); err != nil {
				return byIDWrite{}, false
			}
		} else {
			sections[where].docs = []bson.Raw{narrowedStatement}
		}
	} else {
		sections[0].docs[0] = narrowedStatement
	}
	w.narrowed = buildMessage(binary.LittleEndian.Uint32(req[4:]), binary.LittleEndian.Uint32(req[8:]), sections)
	return w, true
}

// oneDocument returns the string _id of the one document an update or findAndModify req can
// change: one statement, not multi, whose filter names an _id of its own (upserts included: the
// document they insert has that _id); false for any other.
func oneDocument(req []byte) (string, bool) {
	sections, ok := parseSections(req)
	if !ok {
		return "", false
	}
	body := sections[0].docs[0]
	first, err := body.IndexErr(0)
	if err != nil {
		return "", false
	}
	statement, key := body, "query"
	if first.Key() == "update" {
		statements, _ := updateStatements(sections)
		if len(statements) != 1 {
			return "", false
		}
		statement, key = statements[0], "q"
		if multi, _ := statement.Lookup("multi").BooleanOK(); multi {
			return "", false
		}
	}
	filter, ok := statement.Lookup(key).DocumentOK()
	if !ok {
		return "", false
	}
	return filter.Lookup("_id").StringValueOK()
}

// updateStatements are an update command's statements and the section holding them (-1: none).
func updateStatements(sections []section) ([]bson.Raw, int) {
	if arr, ok := sections[0].docs[0].Lookup("updates").ArrayOK(); ok {
		vals, err := arr.Values()
		if err != nil {
			return nil, -1
		}
		var out []bson.Raw
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if !ok {
				return nil, -1
			}
			out = append(out, d)
		}
		return out, 0
	}
	for i, sec := range sections {
		if sec.kind == 1 && sec.id == "updates" {
			return sec.docs, i
		}
	}
	return nil, -1
}

// replaceField returns doc with the value of its field key replaced by v.
func replaceField(doc bson.Raw, key string, v any) (bson.Raw, error) {
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	for i := range d {
		if d[i].Key == key {
			d[i].Value = v
		}
	}
	return bson.Marshal(d)
}

// check asks the backend whether the document of w's _id matches w's whole filter.
func (w byIDWrite) check(server net.Conn) (bool, error) {
	body, err := bson.Marshal(bson.D{{Key: "aggregate", Value: w.coll},
		{Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: w.id}}}},
			bson.D{{Key: "$match", Value: w.filter}},
			bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 1}}}},
		}},
		{Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: w.db}})
	if err != nil {
		return false, err
	}
	if _, err := server.Write(buildMessage(0, 0, []section{{kind: 0, docs: []bson.Raw{body}}})); err != nil {
		return false, err
	}
	res, err := readMessage(server)
	if err != nil {
		return false, err
	}
	sections, ok := parseSections(res)
	if !ok {
		return false, errors.New("embedded mongo: unreadable reply to a check")
	}
	reply := sections[0].docs[0]
	if okv, _ := reply.Lookup("ok").AsFloat64OK(); okv != 1 {
		return false, errors.New("embedded mongo: check failed: " + reply.String())
	}
	batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK()
	if !ok {
		return false, errors.New("embedded mongo: check answered no batch")
	}
	vals, err := batch.Values()
	return len(vals) > 0, err
}

// unmatched is the reply to req, w's write, when no document matched its filter.
func (w byIDWrite) unmatched(req []byte) []byte {
	reply := bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}
	if w.command != "update" {
		reply = bson.D{{Key: "lastErrorObject", Value: bson.D{{Key: "n", Value: int32(0)}, {Key: "updatedExisting", Value: false}}},
			{Key: "value", Value: nil}, {Key: "ok", Value: 1.0}}
	}
	body, _ := bson.Marshal(reply)
	return buildMessage(0, binary.LittleEndian.Uint32(req[4:]), []section{{kind: 0, docs: []bson.Raw{body}}})
}

// findOf returns the fields of req's body, its filter and the filter's number of fields when req
// is a find of one section with a filter document; false otherwise.
func findOf(req []byte) ([]bson.RawElement, bson.Raw, int, bool) {
	sections, ok := parseSections(req)
	if !ok || len(sections) != 1 {
		return nil, nil, 0, false
	}
	body := sections[0].docs[0]
	elems, err := body.Elements()
	if err != nil || len(elems) == 0 || elems[0].Key() != "find" {
		return nil, nil, 0, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, nil, 0, false
	}
	fields, err := filter.Elements()
	if err != nil {
		return nil, nil, 0, false
	}
	return elems, filter, len(fields), true
}

// findKeys are the fields of a find that byIDFind carries over to the aggregation; a find with any
// other (hint, collation, a tailable cursor, ...) passes through.
var findKeys = map[string]bool{"find": true, "filter": true, "limit": true, "singleBatch": true, "batchSize": true,
	"skip": true, "sort": true, "projection": true, "lsid": true, "$db": true, "$readPreference": true,
	"$clusterTime": true, "maxTimeMS": true, "comment": true}

// byIDFind returns req, a find of the document of a string _id under a filter of more than that,
// as the aggregation of {$match: {_id}}, {$match: filter} and the find's skip, limit and
// projection (a sort orders one document at most); false when req is not such a find.
func byIDFind(req []byte) ([]byte, bool) {
	elems, filter, fields, ok := findOf(req)
	if !ok || fields < 2 {
		return nil, false
	}
	id, ok := filter.Lookup("_id").StringValueOK()
	if !ok {
		return nil, false
	}
	pipeline := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: id}}}}, bson.D{{Key: "$match", Value: filter}}}
	cmd := bson.D{{Key: "aggregate", Value: elems[0].Value()}}
	cursor := bson.D{}
	var skip, limit, project bson.D
	for _, e := range elems[1:] {
		if !findKeys[e.Key()] {
			return nil, false
		}
		switch e.Key() {
		case "filter", "singleBatch", "sort":
		case "skip":
			if n, ok := e.Value().AsInt64OK(); ok && n > 0 {
				skip = bson.D{{Key: "$skip", Value: n}}
			}
		case "limit":
			if n, ok := e.Value().AsInt64OK(); ok && n > 0 {
				limit = bson.D{{Key: "$limit", Value: n}}
			}
		case "batchSize":
			cursor = bson.D{{Key: "batchSize", Value: e.Value()}}
		case "projection":
			p, ok := e.Value().DocumentOK()
			if !ok || !plainProjection(p) {
				return nil, false
			}
			if n, _ := p.Elements(); len(n) > 0 {
				project = bson.D{{Key: "$project", Value: p}}
			}
		default:
			cmd = append(cmd, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	for _, stage := range []bson.D{skip, limit, project} {
		if stage != nil {
			pipeline = append(pipeline, stage)
		}
	}
	cmd = append(cmd[:1], append(bson.D{{Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: cursor}}, cmd[1:]...)...)
	raw, err := bson.Marshal(cmd)
	if err != nil {
		return nil, false
	}
	return buildMessage(binary.LittleEndian.Uint32(req[4:]), binary.LittleEndian.Uint32(req[8:]), []section{{kind: 0, docs: []bson.Raw{raw}}}), true
}

// plainProjection reports whether p only includes or excludes fields (no $slice, $elemMatch or
// positional operators), which $project reads as find does.
func plainProjection(p bson.Raw) bool {
	elems, err := p.Elements()
	if err != nil {
		return false
	}
	for _, e := range elems {
		if _, ok := e.Value().AsInt64OK(); ok {
			continue
		}
		if _, ok := e.Value().BooleanOK(); ok {
			continue
		}
		return false
	}
	return true
}

// maxIDs bounds the documents of a find by a list of _ids that the proxy reads one by one.
const maxIDs = 1000

// maxReply bounds the reply the proxy builds of the documents it read one by one (a reply is at
// most 16 MB); a find whose documents would not fit goes as it is.
const maxReply = 15 << 20

// byIDs returns the _ids of req when it is a find by a list of string _ids ({_id: {$in: [...]}},
// nothing else, at most maxIDs), with the find's body for each of them, narrowed to its _id;
// false otherwise. FerretDB reads the whole collection for such a find: the proxy asks for each
// document by its _id instead (pushed down), and answers with all of them (expand).
func byIDs(req []byte) ([]string, func(id string) []byte, bool) {
	elems, filter, fields, ok := findOf(req)
	if !ok || fields != 1 {
		return nil, nil, false
	}
	in, ok := filter.Lookup("_id").DocumentOK()
	if !ok {
		return nil, nil, false
	}
	if ops, err := in.Elements(); err != nil || len(ops) != 1 || ops[0].Key() != "$in" {
		return nil, nil, false
	}
	list, ok := in.Lookup("$in").ArrayOK()
	if !ok {
		return nil, nil, false
	}
	vals, err := list.Values()
	if err != nil || len(vals) > maxIDs {
		return nil, nil, false
	}
	ids := make([]string, 0, len(vals))
	for _, v := range vals {
		id, ok := v.StringValueOK()
		if !ok {
			return nil, nil, false
		}
		ids = append(ids, id)
	}
	keep := bson.D{}
	for _, e := range elems {
		switch e.Key() {
		case "find", "lsid", "$db", "$readPreference", "$clusterTime", "maxTimeMS", "comment", "batchSize":
			keep = append(keep, bson.E{Key: e.Key(), Value: e.Value()})
		case "filter":
		case "projection":
			p, ok := e.Value().DocumentOK()
			if !ok || !plainProjection(p) {
				return nil, nil, false
			}
			keep = append(keep, bson.E{Key: e.Key(), Value: p})
		default:
			return nil, nil, false
		}
	}
	one := func(id string) []byte {
		raw, err := bson.Marshal(append(bson.D{keep[0], {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}}, keep[1:]...))
		if err != nil {
			return nil
		}
		return buildMessage(0, 0, []section{{kind: 0, docs: []bson.Raw{raw}}})
	}
	return ids, one, true
}

// expand reads the documents of ids from server one by one, each with the request one makes,
// and returns the reply to req holding them all; false when a read fails on the backend's side
// or the documents would not fit in one reply (req then goes as it is).
func expand(server net.Conn, req []byte, ids []string, one func(string) []byte, limit int) ([]byte, bool, error) {
	var docs bson.A
	size := 0
	_, ns := command(req)
	for _, id := range ids {
		msg := one(id)
		if msg == nil {
			return nil, false, nil
		}
		if _, err := server.Write(msg); err != nil {
			return nil, false, err
		}
		res, err := readMessage(server)
		if err != nil {
			return nil, false, err
		}
		sections, ok := parseSections(res)
		if !ok {
			return nil, false, nil
		}
		reply := sections[0].docs[0]
		if okv, _ := reply.Lookup("ok").AsFloat64OK(); okv != 1 {
			return nil, false, nil
		}
		if cursor, _ := reply.Lookup("cursor", "id").AsInt64OK(); cursor != 0 {
			return nil, false, nil
		}
		batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK()
		if !ok {
			return nil, false, nil
		}
		vals, err := batch.Values()
		if err != nil {
			return nil, false, nil
		}
		for _, v := range vals {
			if size += len(v.Value); size > limit {
				return nil, false, nil
			}
			docs = append(docs, v)
		}
	}
	if docs == nil {
		docs = bson.A{}
	}
	body, err := bson.Marshal(bson.D{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: docs}, {Key: "id", Value: int64(0)}, {Key: "ns", Value: ns}}},
		{Key: "ok", Value: 1.0}})
	if err != nil {
		return nil, false, nil
	}
	return buildMessage(0, binary.LittleEndian.Uint32(req[4:]), []section{{kind: 0, docs: []bson.Raw{body}}}), true, nil
}
