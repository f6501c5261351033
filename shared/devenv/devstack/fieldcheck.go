package devstack

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FerretDB answers the proxy's check of a conditional write (byIDWrite.check: an aggregation of
// the one document of the write's _id) by decoding the whole document from its JSON into its own
// types, which costs about what the write that follows costs: a chat's reply paid for its
// document's decoding twice. Most checks are equalities and $exists on top-level fields (a
// revision, an owner, "not deleted"); the proxy answers those itself from the document's row,
// reading only those fields' values and types with SQLite's JSON functions, and asks FerretDB when
// the filter holds anything else or a field's stored type is one whose comparison it leaves to
// FerretDB (an array, whose elements an equality matches; an object).

// fieldCondition is one condition of a filter the proxy answers: field equal to a string or an
// integer, or present (or absent).
type fieldCondition struct {
	field  string
	str    string
	num    int64
	isNum  bool
	exists *bool
}

// plainField is a top-level field name the proxy reads with a JSON path as it is.
var plainField = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldConditions are filter's conditions besides its _id, when every one is of the kinds the
// proxy answers.
func fieldConditions(filter bson.Raw) ([]fieldCondition, bool) {
	elems, err := filter.Elements()
	if err != nil {
		return nil, false
	}
	var out []fieldCondition
	for _, e := range elems {
		key, v := e.Key(), e.Value()
		if key == "_id" {
			continue
		}
		if !plainField.MatchString(key) {
			return nil, false
		}
		c := fieldCondition{field: key}
		switch v.Type {
		case bson.TypeString:
			c.str = v.StringValue()
		case bson.TypeInt32:
			c.num, c.isNum = int64(v.Int32()), true
		case bson.TypeInt64:
			c.num, c.isNum = v.Int64(), true
		case bson.TypeEmbeddedDocument:
			ops, err := v.Document().Elements()
			if err != nil || len(ops) != 1 || ops[0].Key() != "$exists" {
				return nil, false
			}
			want, ok := ops[0].Value().BooleanOK()
			if !ok {
				return nil, false
			}
			c.exists = &want
		default:
			return nil, false
		}
		out = append(out, c)
	}
	return out, true
}

// fieldChecker reads the documents' rows of the store's databases, one SQLite pool a database.
type fieldChecker struct {
	dir    string
	mu     sync.Mutex
	dbs    map[string]*sql.DB
	tables sync.Map // "database.collection" -> table name
}

func newFieldChecker(dir string) *fieldChecker {
	return &fieldChecker{dir: dir, dbs: map[string]*sql.DB{}}
}

// db is the pool of database name's file.
func (f *fieldChecker) db(name string) (*sql.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if db := f.dbs[name]; db != nil {
		return db, nil
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(f.dir, name+".sqlite")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	f.dbs[name] = db
	return db, nil
}

// table is the SQLite table of collection coll of database db ("": none yet).
func (f *fieldChecker) table(ctx context.Context, db *sql.DB, dbName, coll string) (string, error) {
	key := dbName + "." + coll
	if t, ok := f.tables.Load(key); ok {
		return t.(string), nil
	}
	var t string
	err := db.QueryRowContext(ctx, `SELECT table_name FROM "_ferretdb_collections" WHERE name = ?`, coll).Scan(&t)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	f.tables.Store(key, t)
	return t, nil
}

// errAskFerretDB means the proxy leaves the check to FerretDB.
var errAskFerretDB = errors.New("embedded mongo: the check is FerretDB's")

// check reports whether the document of w's _id matches w's filter, or errAskFerretDB.
func (f *fieldChecker) check(w byIDWrite) (bool, error) {
	conds, ok := fieldConditions(w.filter)
	if !ok {
		return false, errAskFerretDB
	}
	ctx := context.Background()
	db, err := f.db(w.db)
	if err != nil {
		return false, errAskFerretDB
	}
	table, err := f.table(ctx, db, w.db, w.coll)
	if err != nil || table == "" {
		return false, errAskFerretDB
	}
	cols := []string{"1"}
	for _, c := range conds {
		cols = append(cols, fmt.Sprintf(`json_extract(_ferretdb_sjson, '$."$s".p."%s".t')`, c.field), fmt.Sprintf(`json_extract(_ferretdb_sjson, '$."%s"')`, c.field))
	}
	// The _id as FerretDB looks it up: the JSON of the string, as encoding/json writes it.
	id, err := json.Marshal(w.id)
	if err != nil {
		return false, err
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	err = db.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s FROM %q WHERE _ferretdb_sjson->'$._id' = ?`, strings.Join(cols, ", "), table), string(id)).Scan(vals...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		f.tables.Delete(w.db + "." + w.coll)
		return false, errAskFerretDB
	}
	matched := true
	for i, c := range conds {
		typ, _ := (*vals[1+2*i].(*any)).(string)
		m, ok := c.matches(typ, *vals[2+2*i].(*any))
		if !ok {
			return false, errAskFerretDB
		}
		matched = matched && m
	}
	return matched, nil
}

// matches reports whether a field of FerretDB's type typ ("": absent) and value v (as SQLite's
// json_extract reads it) meets c; false in ok when FerretDB must say.
func (c fieldCondition) matches(typ string, v any) (matched, ok bool) {
	if c.exists != nil {
		return (typ != "") == *c.exists, true
	}
	switch typ {
	case "array", "object":
		return false, false
	case "string":
		s, isStr := v.(string)
		return isStr && !c.isNum && s == c.str, true
	case "int", "long":
		n, isInt := v.(int64)
		return isInt && c.isNum && n == c.num, true
	case "double":
		switch n := v.(type) {
		case float64:
			return c.isNum && n == float64(c.num), true
		case int64:
			return c.isNum && n == c.num, true
		}
		return false, false
	}
	return false, true
}

// forget drops what the checker holds of database name (its pool, its tables) after the
// database or one of its collections was dropped or renamed: a database made again under the
// name is another file, a collection made again may be another table.
func (f *fieldChecker) forget(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if db := f.dbs[name]; db != nil {
		_ = db.Close()
		delete(f.dbs, name)
	}
	f.tables.Range(func(key, _ any) bool {
		if strings.HasPrefix(key.(string), name+".") {
			f.tables.Delete(key)
		}
		return true
	})
}

// forgets are the commands after which the checker forgets their database.
var forgets = map[string]bool{"dropDatabase": true, "drop": true, "renameCollection": true}

// close closes the pools.
func (f *fieldChecker) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, db := range f.dbs {
		_ = db.Close()
	}
	f.dbs = map[string]*sql.DB{}
}
