package group

import (
	"maps"
	"slices"
)

// Parked keeps the answer callbacks of the JoinGroup and SyncGroup
// requests a Coordinator has parked, by RequestID, and turns an Output's
// answers into calls of them. A runtime keeps one per coordinator, under
// the coordinator's own serialisation (it does no locking).
type Parked struct {
	nextID RequestID
	joins  map[RequestID]parkedJoin
	syncs  map[RequestID]func(SyncResponse)
}

type parkedJoin struct {
	memberID string
	done     func(JoinResponse)
}

// Join parks a JoinGroup answer callback and returns the request's id.
func (p *Parked) Join(memberID string, done func(JoinResponse)) RequestID {
	if p.joins == nil {
		p.joins = map[RequestID]parkedJoin{}
	}
	p.nextID++
	p.joins[p.nextID] = parkedJoin{memberID: memberID, done: done}
	return p.nextID
}

// Sync parks a SyncGroup answer callback and returns the request's id.
func (p *Parked) Sync(done func(SyncResponse)) RequestID {
	if p.syncs == nil {
		p.syncs = map[RequestID]func(SyncResponse){}
	}
	p.nextID++
	p.syncs[p.nextID] = done
	return p.nextID
}

// Answers takes out the callbacks out answers, each as a function of the
// outcome of out's write: nil sends the coordinator's answer, an error is
// sent in its place. Ids out answers that are not parked here come back in
// unknown (the coordinator answered a request it was never given).
func (p *Parked) Answers(out Output) (answers []func(error), unknown []RequestID) {
	for _, j := range out.Joins {
		pj, ok := p.joins[j.To]
		if !ok {
			unknown = append(unknown, j.To)
			continue
		}
		delete(p.joins, j.To)
		resp := j.Response
		answers = append(answers, func(err error) {
			if err != nil {
				resp = JoinResponse{Err: err, MemberID: pj.memberID, Generation: -1}
			}
			pj.done(resp)
		})
	}
	for _, s := range out.Syncs {
		done, ok := p.syncs[s.To]
		if !ok {
			unknown = append(unknown, s.To)
			continue
		}
		delete(p.syncs, s.To)
		resp := s.Response
		answers = append(answers, func(err error) {
			if err != nil {
				resp = SyncResponse{Err: err}
			}
			done(resp)
		})
	}
	return answers, unknown
}

// Abandon removes every request still parked and returns functions that
// answer each with err, in request order (so simulated runs stay
// deterministic).
func (p *Parked) Abandon(err error) []func() {
	var out []func()
	for _, id := range slices.Sorted(maps.Keys(p.joins)) {
		pj := p.joins[id]
		out = append(out, func() { pj.done(JoinResponse{Err: err, MemberID: pj.memberID, Generation: -1}) })
	}
	for _, id := range slices.Sorted(maps.Keys(p.syncs)) {
		done := p.syncs[id]
		out = append(out, func() { done(SyncResponse{Err: err}) })
	}
	p.joins, p.syncs = nil, nil
	return out
}
