//! Talking to the server, and the recording that replays it offline.
//!
//! Every exchange goes through a [`Transport`]: [`Live`] sends it over plain
//! HTTP/1.1 to the one base URL the user gave (paths are fixed strings
//! appended to it, so no request ever leaves that server) and keeps a copy
//! of the exact request body and of what came back; [`Replay`] answers the
//! same exchanges from a [`Recording`], so the whole probe re-runs offline,
//! byte for byte the same requests, with the same verdicts.

use std::time::Duration;

use parity_core::Error;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest answer read from a server (a full-vocabulary `n_probs` answer
/// of a 150k-token model is about 15 MB).
pub const MAX_BODY: usize = 64 << 20;

/// One request and what the server answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// `GET` or `POST`.
    pub method: String,
    /// The path under the server's base URL, e.g. `/completion`.
    pub path: String,
    /// The exact JSON body sent (`null` for a GET).
    pub body: Value,
    /// The HTTP status.
    pub status: i32,
    /// The answer, when it was JSON.
    pub response: Option<Value>,
    /// The answer as text, when it was not JSON.
    pub text: Option<String>,
}

/// Sends one request and returns the status and the JSON answer.
pub trait Transport {
    /// `body` `None` means GET. Errors say what went wrong in words: the
    /// server is down, timed out, answered something that is not JSON or
    /// stopped half-way.
    fn call(&mut self, path: &str, body: Option<&Value>) -> Result<(i32, Value), Error>;

    /// Sends these POSTs at the same time (a live server gets them over
    /// separate connections, one thread each) and returns the answers in
    /// the order given; exchanges are kept in that order too, so a replay,
    /// which answers them one after the other, sees the same sequence.
    fn call_together(&mut self, calls: &[(&str, &Value)]) -> Vec<Result<(i32, Value), Error>> {
        calls
            .iter()
            .map(|(path, body)| self.call(path, Some(body)))
            .collect()
    }
}

/// A real server at `base` (`http://host:port`, no path).
#[derive(Debug)]
pub struct Live {
    base: String,
    timeout: Duration,
    /// Everything exchanged so far, in order.
    pub exchanges: Vec<Exchange>,
}

impl Live {
    /// Checks the URL: `http://` only (this client has no TLS), no query.
    pub fn new(server: &str, timeout: Duration) -> Result<Self, Error> {
        let base = server.trim_end_matches('/');
        let Some(rest) = base.strip_prefix("http://") else {
            return Err(Error::new(format_args!(
                "--server {server:?}: only http:// URLs are supported (no TLS), e.g. http://127.0.0.1:8080"
            )));
        };
        if rest.is_empty() || rest.contains(['?', '#', ' ']) {
            return Err(Error::new(format_args!(
                "--server {server:?}: expected http://HOST:PORT"
            )));
        }
        if rest.starts_with('[') {
            // minreq 2 looks the bracketed host up as a name and fails.
            return Err(Error::new(format_args!(
                "--server {server:?}: an IPv6 address is not supported by this HTTP client \
                 (minreq 2); start the server on 127.0.0.1 or give a host name (localhost)"
            )));
        }
        if timeout.is_zero() {
            return Err(Error::new("--timeout must be at least 1 second"));
        }
        Ok(Self {
            base: base.to_string(),
            timeout,
            exchanges: Vec::new(),
        })
    }
}

/// One concurrent call's answer and the exchanges it made.
type Answered = (Result<(i32, Value), Error>, Vec<Exchange>);

impl Transport for Live {
    fn call_together(&mut self, calls: &[(&str, &Value)]) -> Vec<Result<(i32, Value), Error>> {
        let answers: Vec<Answered> = std::thread::scope(|scope| {
            let handles: Vec<_> = calls
                .iter()
                .map(|&(path, body)| {
                    let mut own = Live {
                        base: self.base.clone(),
                        timeout: self.timeout,
                        exchanges: Vec::new(),
                    };
                    scope.spawn(move || {
                        let answer = own.call(path, Some(body));
                        (answer, own.exchanges)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Err(Error::new("a concurrent request's thread panicked")),
                            Vec::new(),
                        )
                    })
                })
                .collect()
        });
        answers
            .into_iter()
            .map(|(answer, exchanges)| {
                self.exchanges.extend(exchanges);
                answer
            })
            .collect()
    }

    fn call(&mut self, path: &str, body: Option<&Value>) -> Result<(i32, Value), Error> {
        let url = format!("{}{path}", self.base);
        let secs = self.timeout.as_secs().max(1);
        let request = match body {
            None => minreq::get(&url),
            Some(b) => minreq::post(&url)
                .with_header("Content-Type", "application/json")
                .with_body(b.to_string()),
        }
        .with_timeout(secs)
        .with_max_headers_size(64 << 10)
        .with_max_status_line_length(4 << 10);
        let method = if body.is_some() { "POST" } else { "GET" };
        let response = request.send().map_err(|e| describe(&e, &url, secs))?;
        let bytes = response.as_bytes();
        if bytes.len() > MAX_BODY {
            return Err(Error::new(format_args!(
                "{method} {url}: the answer is {} bytes, more than the {MAX_BODY} this probe reads",
                bytes.len()
            )));
        }
        let parsed: Result<Value, _> = serde_json::from_slice(bytes);
        let text = String::from_utf8_lossy(bytes);
        self.exchanges.push(Exchange {
            method: method.to_string(),
            path: path.to_string(),
            body: body.cloned().unwrap_or(Value::Null),
            status: response.status_code,
            response: parsed.as_ref().ok().cloned(),
            text: parsed.is_err().then(|| text.to_string()),
        });
        answer(method, &url, response.status_code, parsed, &text)
    }
}

/// The status and JSON of an answer, or an error quoting the start of it.
fn answer(
    method: &str,
    url: &str,
    status: i32,
    parsed: Result<Value, serde_json::Error>,
    text: &str,
) -> Result<(i32, Value), Error> {
    match parsed {
        Ok(v) => Ok((status, v)),
        Err(e) if e.is_eof() && !text.trim().is_empty() => Err(Error::new(format_args!(
            "{method} {url}: the answer is truncated JSON ({e}; {} bytes)",
            text.len()
        ))),
        Err(e) => Err(Error::new(format_args!(
            "{method} {url}: HTTP {status}, the answer is not JSON ({e}): {:?}",
            head(text)
        ))),
    }
}

fn head(text: &str) -> String {
    text.chars().take(200).collect()
}

fn describe(e: &minreq::Error, url: &str, secs: u64) -> Error {
    use std::io::ErrorKind;
    match e {
        minreq::Error::IoError(io) => match io.kind() {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                Error::new(format_args!("{url}: no answer within {secs} s (--timeout)"))
            }
            ErrorKind::ConnectionRefused => Error::new(format_args!(
                "{url}: connection refused: is the server running at that address?"
            )),
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset => Error::new(format_args!(
                "{url}: the server closed the connection before the answer was complete ({io})"
            )),
            _ => Error::new(format_args!("{url}: {io}")),
        },
        other => Error::new(format_args!("{url}: {other}")),
    }
}

/// Answers from a recording: each call must match the next unused recorded
/// exchange with the same method, path and body.
#[derive(Debug)]
pub struct Replay {
    exchanges: Vec<(Exchange, bool)>,
}

impl Replay {
    /// Replays these exchanges.
    pub fn new(exchanges: Vec<Exchange>) -> Self {
        Self {
            exchanges: exchanges.into_iter().map(|e| (e, false)).collect(),
        }
    }
}

impl Transport for Replay {
    fn call(&mut self, path: &str, body: Option<&Value>) -> Result<(i32, Value), Error> {
        let method = if body.is_some() { "POST" } else { "GET" };
        let body = body.cloned().unwrap_or(Value::Null);
        let found = self
            .exchanges
            .iter_mut()
            .find(|(e, used)| !*used && e.method == method && e.path == path && e.body == body);
        let Some((e, used)) = found else {
            return Err(Error::new(format_args!(
                "the recording has no answer to {method} {path} with body {}: it was made with other options",
                head(&body.to_string())
            )));
        };
        *used = true;
        let url = format!("(recorded) {path}");
        match (&e.response, &e.text) {
            (Some(v), _) => Ok((e.status, v.clone())),
            (None, Some(text)) => answer(method, &url, e.status, serde_json::from_str(text), text),
            (None, None) => Err(Error::new(format_args!(
                "{url}: the recording holds neither JSON nor text"
            ))),
        }
    }
}
