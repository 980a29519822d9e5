// Bank accounts with deposits and withdrawals.
using System;
using System.Collections.Generic;

namespace Samples
{
    public class Account
    {
        private readonly List<decimal> entries = new List<decimal>();

        public void Deposit(decimal amount)
        {
            var value = Math.Abs(amount);
            entries.Add(value);
        }

        public void Withdraw(decimal amount)
        {
            var value = Math.Abs(amount);
            entries.Add(-value);
        }

        public decimal Balance()
        {
            decimal sum = 0;
            foreach (var entry in entries)
            {
                sum += entry;
            }
            return sum;
        }
    }
}
