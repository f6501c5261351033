// Package eval measures how well memory retrieval answers users' questions.
//
// It holds no production code. Its test, TestRetrievalEval, indexes six openly
// licensed documents of different kinds (testdata/docs, listed with their
// sources and licences in testdata/docs.json) the way ingestion does, asks the
// questions of testdata/questions.json, and reports recall@5, MRR and query
// latency per split and per document, and how often the offline model, answering
// from the first five passages as a chat turn does, cites the one that answers. It fails when a split falls below its floor, or when
// docs/QUALITY.md does not hold the report it measured (latency aside); -update writes it:
//
//	go test ./shared/memory/eval -run TestRetrievalEval -count=1 -update
//
// The questions are split into a tuning half and a held-out half; ranking
// changes may be tuned on the first only, and are judged on the second.
package eval
