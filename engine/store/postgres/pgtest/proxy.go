package pgtest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
)

// Proxy stands between clients and a server on loopback, as a network
// between agentctl and PostgreSQL does, and cuts connections on demand:
// all at once (a dropped network), or the next time a client sends a
// given statement, after the server has it and before its answer comes
// back (a COMMIT whose outcome the client cannot know).
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]net.Conn // client → server
	mark  []byte                // a connection that sends this is marked
	cut   []byte                // cut a marked connection after it sends this, once
	// refuse, set, closes new connections at once, and is set when a
	// cut is made with Then refusing.
	refuse, thenRefuse bool
	block              []byte // cut every connection that sends this
}

// NewProxy listens on a loopback port and forwards each connection to
// the host and port of url.
func NewProxy(serverURL string) (*Proxy, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]net.Conn{}}
	go p.accept()
	return p, nil
}

// URL is serverURL with the proxy's address in place of the server's.
func (p *Proxy) URL(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return serverURL
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// CutAll closes every connection under way, as a dropped network does;
// new ones are made as before.
func (p *Proxy) CutAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for c, s := range p.conns {
		c.Close()
		s.Close()
		delete(p.conns, c)
	}
	return n
}

// CutAfter arms the proxy: the next message a client sends that holds
// text (compared without case) reaches the server, and then that
// client's connection is closed before any answer reaches it. With a
// mark, only a connection that has sent the mark since (say, a
// statement of the transaction to cut at its COMMIT) is cut.
func (p *Proxy) CutAfter(text string, mark ...string) {
	p.mu.Lock()
	p.cut, p.mark = bytes.ToLower([]byte(text)), nil
	if len(mark) > 0 {
		p.mark = bytes.ToLower([]byte(mark[0]))
	}
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.CutAll()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c] = s
		p.mu.Unlock()
		go p.pipe(c, s)
		go func() { io.Copy(c, s); p.drop(c) }()
	}
}

// pipe copies what client c sends to server s, cutting both once an
// armed statement has gone through.
func (p *Proxy) pipe(c, s net.Conn) {
	buf := make([]byte, 32<<10)
	marked := false
	for {
		n, err := c.Read(buf)
		if n > 0 {
			// Whether to cut is decided before the server has the
			// bytes: their sender cannot have armed the proxy after
			// them, since it waits for their answer.
			if p.blocked(buf[:n]) {
				p.drop(c)
				return
			}
			cut, all := p.armed(buf[:n], &marked)
			if _, werr := s.Write(buf[:n]); werr != nil {
				p.drop(c)
				return
			}
			if cut {
				// The server has the statement and carries it out; its
				// answer finds the client gone (the copy back fails
				// then, and drops the server's side).
				c.Close()
				if all {
					p.cutOthers(c)
				}
				return
			}
		}
		if err != nil {
			p.drop(c)
			return
		}
	}
}

// Block cuts every connection that sends text (compared without case)
// from now on, before the server has it; "" stops.
func (p *Proxy) Block(text string) {
	p.mu.Lock()
	p.block = bytes.ToLower([]byte(text))
	if text == "" {
		p.block = nil
	}
	p.mu.Unlock()
}

func (p *Proxy) blocked(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.block != nil && bytes.Contains(bytes.ToLower(b), p.block)
}

// armed says whether to cut the connection that sent b, which has sent
// the mark before when marked.
// all says to cut every other connection too: the proxy now refuses.
func (p *Proxy) armed(b []byte, marked *bool) (cut, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil {
		return false, false
	}
	low := bytes.ToLower(b)
	if p.mark != nil && !*marked {
		*marked = bytes.Contains(low, p.mark)
		return false, false // the mark and the cut are two messages
	}
	if !bytes.Contains(low, p.cut) {
		return false, false
	}
	p.cut, p.mark, *marked = nil, nil, false
	all = p.thenRefuse
	p.refuse, p.thenRefuse = p.refuse || p.thenRefuse, false
	return true, all
}

// cutOthers closes every connection but c's server side, which still
// carries the statement that was cut after.
func (p *Proxy) cutOthers(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for o, s := range p.conns {
		if o != c {
			o.Close()
			s.Close()
			delete(p.conns, o)
		}
	}
}

// Refuse makes the proxy close every new connection at once (on), as a
// server that is down does, or accept them again (off). With then, it
// starts refusing at the next cut CutAfter armed, not now, and cuts
// every other connection then.
func (p *Proxy) Refuse(on, then bool) {
	p.mu.Lock()
	if then {
		p.thenRefuse = on
	} else {
		p.refuse, p.thenRefuse = on, false
	}
	p.mu.Unlock()
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.conns[c]; ok {
		c.Close()
		s.Close()
		delete(p.conns, c)
	}
}

// String names the proxy, for messages.
func (p *Proxy) String() string { return fmt.Sprintf("proxy %s → %s", p.ln.Addr(), p.target) }
