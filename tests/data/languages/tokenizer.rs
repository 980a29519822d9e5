//! A tokenizer for a small arithmetic language.
use std::fmt;
use std::iter::Peekable;
use std::str::Chars;

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Number(f64),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    LParen,
    RParen,
    Comma,
}

#[derive(Debug, PartialEq)]
pub struct LexError {
    pub position: usize,
    pub found: char,
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unexpected {:?} at {}", self.found, self.position)
    }
}

impl std::error::Error for LexError {}

pub struct Lexer<'a> {
    chars: Peekable<Chars<'a>>,
    position: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(source: &'a str) -> Self {
        Lexer { chars: source.chars().peekable(), position: 0 }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        self.position += c.len_utf8();
        Some(c)
    }

    fn number(&mut self, first: char) -> Token {
        let mut text = String::from(first);
        while let Some(&c) = self.chars.peek() {
            if c.is_ascii_digit() || c == '.' {
                text.push(c);
                self.bump();
            } else {
                break;
            }
        }
        Token::Number(text.parse().unwrap_or(0.0))
    }

    fn ident(&mut self, first: char) -> Token {
        let mut text = String::from(first);
        while let Some(&c) = self.chars.peek() {
            if c.is_alphanumeric() || c == '_' {
                text.push(c);
                self.bump();
            } else {
                break;
            }
        }
        Token::Ident(text)
    }

    pub fn tokens(mut self) -> Result<Vec<Token>, LexError> {
        let mut out = Vec::new();
        while let Some(c) = self.bump() {
            let token = match c {
                ' ' | '\t' | '\n' => continue,
                '+' => Token::Plus,
                '-' => Token::Minus,
                '*' => Token::Star,
                '/' => Token::Slash,
                '(' => Token::LParen,
                ')' => Token::RParen,
                ',' => Token::Comma,
                d if d.is_ascii_digit() => self.number(d),
                a if a.is_alphabetic() => self.ident(a),
                other => {
                    return Err(LexError { position: self.position - 1, found: other });
                }
            };
            out.push(token);
        }
        Ok(out)
    }
}

pub fn count_numbers(tokens: &[Token]) -> usize {
    tokens.iter().filter(|t| matches!(t, Token::Number(_))).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_an_expression() {
        let tokens = Lexer::new("2 * (x + 1.5)").tokens().unwrap();
        assert_eq!(tokens.len(), 7);
        assert_eq!(count_numbers(&tokens), 2);
    }

    #[test]
    fn reports_the_bad_character() {
        let error = Lexer::new("1 + $").tokens().unwrap_err();
        assert_eq!(error.found, '$');
    }
}
