"""Drop-in adapters: the interfaces of other libraries over topicmatch's matchers."""
