package sequencer

import (
	"fmt"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// The batched calls: fewer crossings into the plugin per event (docs/DESIGN.md §3.5).

func (s *Sequencer) seqsOf(seqs []SeqID) []uint16 {
	s.quadSeqs = s.quadSeqs[:0]
	for _, q := range seqs {
		s.quadSeqs = append(s.quadSeqs, uint16(q))
	}
	return s.quadSeqs
}

func quadOf(seqs []SeqID) (guest.Quad, error) {
	var q guest.Quad
	if len(seqs) > 4 {
		return q, &Error{Code: CodeInvalidParams, Text: fmt.Sprintf("at most four sequences, got %d", len(seqs))}
	}
	q.Count = uint8(len(seqs))
	for k, x := range seqs {
		q.Seqs[k] = uint16(x)
	}
	return q, nil
}

// StartNext is Start, then Next of each of seqs, in one call: the offset and the numbers
// (appended to out[:0]); on "not now" no transaction began and there are no numbers. Up to
// four sequences cross as a seq-quad, more as lists. A refused Next inside drops the
// transaction.
func (s *Sequencer) StartNext(kind WSKind, ws WSID, seqs []SeqID, out []Number) (PLogOffset, bool, []Number, error) {
	return s.startNext(false, kind, ws, seqs, out)
}

// FlushStartNext is Flush, then StartNext, in one call: one crossing per event. An error
// ErrNoTransaction or ErrClosed comes from the flush (nothing was done); any other comes from
// the start: the flush is done and no transaction is open.
func (s *Sequencer) FlushStartNext(kind WSKind, ws WSID, seqs []SeqID, out []Number) (PLogOffset, bool, []Number, error) {
	return s.startNext(true, kind, ws, seqs, out)
}

func (s *Sequencer) startNext(flush bool, kind WSKind, ws WSID, seqs []SeqID, out []Number) (PLogOffset, bool, []Number, error) {
	out = out[:0]
	s.mu.Lock() // no closure here: the per-event path allocates nothing
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return 0, false, out, err
	}
	if err := s.report(i); err != nil {
		return 0, false, out, s.done(err)
	}
	var st guest.Start
	if q, qerr := quadOf(seqs); qerr == nil {
		var n [4]uint64
		if flush {
			st, n, err = i.FlushStartNextQuad(uint16(kind), uint64(ws), q)
		} else {
			st, n, err = i.StartNextQuad(uint16(kind), uint64(ws), q)
		}
		if err == nil && st.Started {
			for k := range seqs {
				out = append(out, Number(n[k]))
			}
		}
	} else {
		var numbers []uint64
		if flush {
			st, numbers, err = i.FlushStartNext(uint16(kind), uint64(ws), s.seqsOf(seqs), s.numBuf)
		} else {
			st, numbers, err = i.StartNext(uint16(kind), uint64(ws), s.seqsOf(seqs), s.numBuf)
		}
		s.numBuf = numbers
		for _, n := range numbers {
			out = append(out, Number(n))
		}
	}
	if err = s.done(err); err != nil || !st.Started {
		return 0, false, out, err
	}
	return PLogOffset(st.Offset), true, out, nil
}

// StartBatch numbers several events in one call, one per entry of ws (all of kind kind), each
// taking a number of each of seqs (at most four); each is staged (see Stage). It stops at the
// first "not now". Append the events to the PLog, then call Flush (or FlushStartBatch) to
// complete them together, or Actualize to drop them. The numbers are appended to out[:0] and
// returned in Batch.Numbers.
func (s *Sequencer) StartBatch(kind WSKind, ws []WSID, seqs []SeqID, out []Number) (Batch, error) {
	return s.batch(false, kind, ws, seqs, out)
}

// FlushStartBatch is Flush, then StartBatch, in one call (one crossing per batch).
// ErrNoTransaction or ErrClosed come from the flush: nothing was done.
func (s *Sequencer) FlushStartBatch(kind WSKind, ws []WSID, seqs []SeqID, out []Number) (Batch, error) {
	return s.batch(true, kind, ws, seqs, out)
}

func (s *Sequencer) batch(flush bool, kind WSKind, ws []WSID, seqs []SeqID, out []Number) (Batch, error) {
	q, err := quadOf(seqs)
	if err != nil {
		return Batch{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return Batch{}, err
	}
	if err := s.report(i); err != nil {
		return Batch{}, s.done(err)
	}
	s.wsBuf = s.wsBuf[:0]
	for _, w := range ws {
		s.wsBuf = append(s.wsBuf, uint64(w))
	}
	var b guest.Batch
	if flush {
		b, err = i.FlushStartBatch(uint16(kind), s.wsBuf, q, s.numBuf)
	} else {
		b, err = i.StartBatch(uint16(kind), s.wsBuf, q, s.numBuf)
	}
	if b.Numbers != nil {
		s.numBuf = b.Numbers
	}
	if err = s.done(err); err != nil {
		return Batch{}, err
	}
	out = out[:0]
	for _, n := range b.Numbers {
		out = append(out, Number(n))
	}
	return Batch{FirstOffset: PLogOffset(b.FirstOffset), Started: int(b.Started), NotNow: b.NotNow,
		Reason: NotNowReason(b.Reason), Numbers: out}, nil
}
