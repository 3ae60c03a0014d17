mod recorded;
