"""Who may do what: privileges, the failed-login lock-out, the MySQL port's TLS certificate."""
