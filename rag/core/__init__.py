"""What every stage shares: the types (Source, Answer), configuration, errors, citation markers and markup."""
