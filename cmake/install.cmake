# install rules: filled in with the backend
