//! A ledger of signed amounts.
use std::collections::HashMap;

pub struct Ledger {
    entries: HashMap<String, i64>,
}

pub trait Balance {
    fn balance(&self) -> i64;
}

impl Ledger {
    pub fn new() -> Self {
        Ledger { entries: HashMap::new() }
    }

    pub fn credit(&mut self, name: &str, amount: i64) {
        let entry = self.entries.entry(name.to_string()).or_insert(0);
        *entry += amount;
    }

    pub fn debit(&mut self, name: &str, amount: i64) {
        let entry = self.entries.entry(name.to_string()).or_insert(0);
        *entry -= amount;
    }
}

impl Balance for Ledger {
    fn balance(&self) -> i64 {
        let mut sum = 0;
        for amount in self.entries.values() {
            sum += amount;
        }
        sum
    }
}

mod report {
    pub fn line(name: &str, amount: i64) -> String {
        format!("{name}: {amount}")
    }
}
